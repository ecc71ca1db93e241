"""Putting a block and its request back in step after a crash.

An escalation is one transaction
(:meth:`~loopkit.escalation.escalator.Escalator.place`): the request is saved
``block: pending``, BLOCKED.md is created, the request becomes ``raised``, then the message
is sent with an ``ok: null`` attempt recorded first. A ``kill -9`` anywhere in it leaves one
of three states, each finished here at the next start of ``run``, ``escalate``, ``status``
or ``serve`` (``check`` stays a pure read):

1. a pending record: BLOCKED.md is written from it (or, when another block stands now, the
   question joins that one), so the question is never silently dropped;
2. the standing block's request with no delivery attempt: its message is sent;
3. an attempt left in flight for longer than the grace period: sent once more, as a repeat.

Every send claims its attempt under the store lock, so two processes repairing at once
send once. Temporary files a crash left between write and rename are removed too.
"""

from __future__ import annotations

from loopkit import readfile
from loopkit.errors import BadInput, LoopkitError
from loopkit.escalation import blockfile, delivery
from loopkit.log import get_logger
from loopkit.requests.models import Block

TYPE_CHECKING = False
if TYPE_CHECKING:  # the escalator (the sender, the channels) only once there is work
    from loopkit.config import Config
    from loopkit.escalation.blockfile import Escalation
    from loopkit.escalation.escalator import Escalator, Result
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.repair")


def repair(escalator: Escalator, *, send: bool = True) -> list[str]:
    """Finish what a crash cut short; returns one line per repair (also logged)."""
    store, workspace = escalator.store, escalator.workspace
    done: list[str] = []
    if removed := workspace.sweep_temps():
        done.append(f"removed {removed} temporary file(s) left by a crash")
    for request_id in _pending(escalator):
        try:
            with store.locked():
                record = store.load(request_id)
                if record.block != "pending":
                    continue  # another process finished it meanwhile
                if not record.is_open:
                    record.block = Block.RAISED
                    store.save(record)
                    continue
                written = blockfile.request_id_of(workspace.blocked) == request_id
                result = escalator.write_pending(record)
        except BadInput as exc:
            log.warning("repair_blocked", request_id=request_id, msg=str(exc))
            continue
        if result.joined:
            done.append(f"request {request_id}: its question joined the open block")
        else:
            how = "was written; the request now says so" if written else "written now"
            done.append(f"request {request_id}: {workspace.blocked.name} {how}")
            if send:
                escalator.sender.recover(result.request)
    if send:
        _recover_delivery(escalator)
    for line in done:
        log.warning("repaired", msg=f"finishing an escalation cut short: {line}")
    return done


def needed(config: Config, store: RequestStore) -> bool:
    """Would :func:`repair` find anything to do? Cheap, and never wrong the unsafe way: a
    command that only reads (``status``) builds the escalator — the sender, the channels —
    only when a crash left work behind (SPEC §20)."""
    workspace = store.workspace
    if workspace.stale_temps() or _pending_in(store):
        return True
    if not delivery.rungs(config.escalation):
        return False
    if blockfile.state(workspace.blocked) != "file":
        return False
    request_id = blockfile.request_id_of(workspace.blocked)
    if request_id is None:
        return False
    try:
        record = store.load(request_id)
    except LoopkitError:
        return False
    unsent = record.has_own_block and not record.delivery
    return record.is_open and (unsent or any(e.in_flight for e in record.delivery))


def _pending(escalator: Escalator) -> list[str]:
    return _pending_in(escalator.store)


def _pending_in(store: RequestStore) -> list[str]:
    """The ids of records saved ``block: pending``. Every start looks, so each file is only
    searched for the word (``"pending"``; ``"block_pending"`` in a version-1 record) and
    parsed when it has it: a workspace with a thousand answered requests costs a thousand
    small reads, not a thousand parses."""
    found: list[tuple[str, str]] = []
    for request_id in store.ids():
        try:
            raw = readfile.read_bytes(store.path(request_id))
        except OSError:
            continue
        if b'pending"' not in raw:
            continue
        try:
            record = store.load(request_id)
        except LoopkitError:
            continue  # corrupt: its own commands say so
        if record.block == "pending":
            found.append((record.created_at, request_id))
    return [request_id for _, request_id in sorted(found)]  # the oldest question first


def _recover_delivery(escalator: Escalator) -> None:
    path = escalator.workspace.blocked
    if blockfile.state(path) != "file":
        return
    request_id = blockfile.request_id_of(path)
    if request_id is None:
        return
    try:
        record = escalator.store.load(request_id)
    except LoopkitError:
        return
    escalator.sender.recover(record)


def escalate(escalator: Escalator, escalation: Escalation) -> Result:
    """An agent's ``escalate`` (the command and the MCP tool): what a crash left half-raised
    is raised first — so this question joins that block — then this one."""
    repair(escalator)
    return escalator.escalate(escalation)
