"""An irreversible approval takes two taps (SPEC section 16).

A P0 approval is an approval whose action cannot be undone: a ``loopkit gate`` command or a
Claude Code hook's gated call (the record's ``gate`` binding), or an approval ``ask`` found
P0 (``needs_human.p0``: irreversible, data loss, security, legal, a one-way door). Approving
one from the web inbox or Telegram first asks :func:`confirm_question` with a second button;
only that second tap records the approval. A reply that rejects, or asks for changes, is
recorded at once. And no hint offers a letter that approves one (``loopkit inbox``, the
``BLOCKED.md`` Choices line): they offer ``reject`` and name ``approve``, to be typed on
purpose.
"""

from __future__ import annotations

import shlex

from loopkit.errors import LoopkitError
from loopkit.message import fold
from loopkit.requests.answer import parse_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.requests.record import Request


def is_irreversible(record: Request) -> bool:
    """Whether approving ``record`` cannot be undone (a P0 approval)."""
    return record.kind == "approval" and record.is_p0


def approves(record: Request, reply: str) -> bool:
    """Whether ``reply`` would approve ``record`` (read as an answer would be): "Always
    allow" on a Claude Code permission dialog approves too, and more."""
    try:
        decision, _ = parse_for(record, reply)
    except LoopkitError:
        return False
    return decision.chosen_option in ("approved", "always")


def needs_second_tap(record: Request, reply: str) -> bool:
    """Whether recording ``reply`` on ``record`` waits for a confirming second tap."""
    return record.is_open and is_irreversible(record) and approves(record, reply)


def action(record: Request) -> str:
    """What an approval of ``record`` lets happen: the gated command (masked, as it is
    shown), else the question asked."""
    gate = record.gate or {}
    shown = gate.get("command")  # an agent's call, as it runs (a shell line is not re-quoted)
    if isinstance(shown, str) and shown:
        return f"`{fold(shown, 120)}`"
    argv = gate.get("argv")
    if isinstance(argv, list) and argv:
        words = [str(word) for word in argv]
        bash = gate.get("tool") in (None, "Bash")  # a file tool's call is its name and path
        return f"`{fold(shlex.join(words) if bash else ' '.join(words), 120)}`"
    return f"“{fold(record.prompt.rstrip(' ?'), 120)}”"


def confirm_question(record: Request, reply: str | None = None) -> str:
    """``Approve <the command>? This cannot be undone.`` — or, for "Allow always here"
    (SPEC §30), that every identical call will run without asking."""
    if reply is not None and always(record, reply):
        return (
            f"Allow {action(record)} always here? It runs now, and every identical call in "
            "this workspace runs without asking until the rule is removed (`loopkit rules`)."
        )
    return f"Approve {action(record)}? This cannot be undone."


def always(record: Request, reply: str) -> bool:
    """Whether ``reply`` chooses "Allow always here" on ``record``."""
    try:
        decision, _ = parse_for(record, reply)
    except LoopkitError:
        return False
    return decision.chosen_option == "always"
