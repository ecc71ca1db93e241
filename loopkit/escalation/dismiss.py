"""The ghosts that ``loopkit dismiss ID`` closes (SPEC section 16).

A dismissal is never an answer: the request becomes ``status: dismissed`` with nothing
chosen, so ``requests wait`` exits 3 (no go-ahead), a gate does not run its command and no
agent run gets a decision. It comes in by the answering service's door
(:meth:`loopkit.answering.service.Answering.dismiss`): recorded once, as an answer is, and
then the request's own ``BLOCKED.md`` goes.

A *ghost* is an open request whose own block is gone: a bare ``loopkit escalate`` whose
``BLOCKED.md`` a human deleted with no supervisor there to see it stays open in every inbox,
and nobody will answer it. ``status`` and the inboxes name them, with the command that closes
them.
"""

from __future__ import annotations

from loopkit.escalation import blockfile
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.requests.store import RequestStore


def command(request_id: str) -> str:
    """The command that dismisses ``request_id``, from any folder."""
    return f"loopkit dismiss {request_id}"


def is_ghost(store: RequestStore, record: Request) -> bool:
    """``record`` is open and had a block of its own that is gone: nobody will answer it
    from the block. (A request asked without a block, or joined to another's, is no ghost:
    an agent waits on it, or the block it joined.)"""
    if not record.is_open or record.block not in ("raised", "adopted"):
        return False
    path = store.workspace.blocked
    return blockfile.state(path) != "other" and not blockfile.is_block_of(path, record)


def ghosts(store: RequestStore) -> list[Request]:
    """The ghosts of ``store``'s workspace, oldest first."""
    return [r for _, r in store.all() if isinstance(r, Request) and is_ghost(store, r)]
