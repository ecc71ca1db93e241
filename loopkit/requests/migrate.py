"""Records written by earlier versions of loopkit, upgraded on read.

A record carries ``schema_version``. One written by an older version is brought to the
current shape when it is read (from ``requests/<id>.json`` or another machine's fleet row),
before it is typed, and is written in the current shape the next time loopkit saves it.
Fields a migration does not know pass through unchanged. A migration is a pure function of
the JSON object; its input's shape is checked first
(:data:`loopkit.requests.shape.V1_LIFECYCLE`, which also names version 1's lifecycle fields:
four booleans and a tri-state).
"""

from __future__ import annotations

from loopkit.requests.models import Block
from loopkit.requests.shape import V1_LIFECYCLE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (and the unversioned records before it) → version 2: the lifecycle fields
    become one ``block`` state, and ``joined_to`` for the request of the block it joined.

    What version 1 wrote, and what each combination meant:

    - ``adopted`` (with ``raised_block``): an agent's hand-written BLOCKED.md → ``adopted``;
    - ``block_pending`` (with ``raised_block``): saved, BLOCKED.md not written yet → ``pending``;
    - ``raised_block`` alone: a BLOCKED.md of its own → ``raised``;
    - ``joined_block`` present: it joined an open block instead of being asked → ``joined``,
      with ``joined_to`` the id it holds; null (or ``""``) meant a block that names no
      request (a hand-written one), so ``joined_to`` is left out;
    - ``not_raised`` (asked without ``--block``), or none of them → ``none``.

    Version 1 never wrote two of these states at once; a hand-made record that does gets the
    first in that order.
    """
    migrated = {k: v for k, v in data.items() if k not in V1_LIFECYCLE}
    joined_to: str | None = None
    block: Block
    if data.get("adopted"):
        block = Block.ADOPTED
    elif data.get("block_pending"):
        block = Block.PENDING
    elif data.get("raised_block"):
        block = Block.RAISED
    elif "joined_block" in data:
        block, joined_to = Block.JOINED, data["joined_block"] or None
    else:
        block = Block.NONE
    migrated["block"] = block
    if joined_to is not None:
        migrated["joined_to"] = joined_to
    migrated["schema_version"] = 2
    return migrated
