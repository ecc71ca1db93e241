"""``loopkit dismiss ID [--reason TEXT]``: close an open request nobody will answer (SPEC
section 16), and the ghosts that need it.

A dismissal is never an answer: the request becomes ``status: dismissed`` with nothing
chosen, so ``requests wait`` exits 3 (no go-ahead), a gate does not run its command and no
agent run gets a decision. It is recorded once, as an answer is — under the store lock and
the hub's claim (another machine's answer that came first wins; then exit 4) — and then the
request's own ``BLOCKED.md`` goes (never another request's block, never a human's own file).

A *ghost* is an open request whose own block is gone: a bare ``loopkit escalate`` whose
``BLOCKED.md`` a human deleted with no supervisor there to see it stays open in every inbox,
and nobody will answer it. ``status`` and the inboxes name them, with the command that closes
them.
"""

from __future__ import annotations

from loopkit.datarecord import record
from loopkit.escalation import blockfile
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.requests.store import RequestStore


@record(frozen=True, slots=True)
class Dismissed:
    record: Request
    removed: bool  # its BLOCKED.md was removed

    @property
    def message(self) -> str:
        lifted = "; BLOCKED.md removed" if self.removed else ""
        return f"request {self.record.request_id} dismissed (nobody will answer it){lifted}"


def dismiss(
    store: RequestStore, request_id: str, *, by: str, via: str, reason: str | None = None
) -> Dismissed:
    """Dismiss ``request_id`` of ``store``. RequestNotFound (66) when there is no such request,
    RequestConflict (4) when it is closed already: the first ending stands."""

    def close(record: Request) -> None:
        from loopkit.requests.answer import dismiss_record  # the reply parser: on use only

        dismiss_record(record, by=by, via=via, reason=reason)
        store.hub.claim(store.workspace, record)  # fleet-wide, as an answer is (SPEC §13)

    record = store.update(request_id, close)
    removed = blockfile.remove_block(store.workspace.blocked, record)
    return Dismissed(record, removed)


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
