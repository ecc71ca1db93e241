"""``loopkit unblock [--reply TEXT]``: answer the open block's request, then remove BLOCKED.md.

The answer is recorded first and the file removed second, so a supervisor that sees the file
go finds the decision already on the request and hands it to the next agent run.
"""

from __future__ import annotations

import contextlib

from loopkit.datarecord import record
from loopkit.errors import RequestConflict, RequestNotFound
from loopkit.escalation import adoption, blockfile
from loopkit.requests.answer import answer, unblocked_by_hand
from loopkit.requests.reading import told_back
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import Config


@record(frozen=True, slots=True)
class Unblocked:
    message: str
    decision: dict[str, Any] | None = None
    reading: str | None = None  # how the reply was read (requests.reading.told_back)


def unblock(
    config: Config, *, reply: str | None, by: str, store: RequestStore | None = None
) -> Unblocked:
    workspace = Workspace.of(config)
    path = workspace.blocked
    state = blockfile.state(path)
    if state == "other":
        raise blockfile.not_a_file(path)
    if state == "absent":
        if reply is not None:
            raise RequestNotFound(
                f"not blocked ({path.name} is absent): nothing to answer; "
                "answer a request with `loopkit reply --request-id ID --reply …`"
            )
        return Unblocked(f"not blocked: {path.name} is absent; nothing to do")
    store = store or RequestStore(workspace)
    marked = blockfile.request_id_of(path)
    request_id = adoption.block_request(path, store)
    decision = reading = None
    if reply is not None:
        if request_id is None:
            raise RequestNotFound(
                f"{path} names no loopkit request to answer; delete it to unblock"
            )
        try:
            result = answer(store, request_id, reply, by=by, via="cli")
        except RequestConflict as conflict:
            if store.load(request_id).status == "expired":
                raise  # its message already says how to lift the block
            hint = "`loopkit unblock` without --reply lifts the block"
            raise RequestConflict(f"{conflict}; {hint}") from None
        decision = result.decision
        reading = told_back(result.record)
        what = "deferred (it stays open)" if result.deferred else "answered"
        message = f"request {request_id} {what}; {path.name} removed"
    elif request_id is not None:
        try:
            record = store.load(request_id)
        except RequestNotFound:
            record = None
        if record is not None and record.status == "open":
            store.resolve(request_id, unblocked_by_hand(request_id, by=by, via="cli"))
            message = f"request {request_id} resolved as unblocked by hand; {path.name} removed"
        elif record is not None:
            message = f"request {request_id} was already {record.status}; {path.name} removed"
        else:
            message = f"request {request_id} not found; {path.name} removed"
    else:
        message = f"{path.name} removed (it named no loopkit request)"
    if blockfile.request_id_of(path) == marked:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return Unblocked(message, decision, reading)
