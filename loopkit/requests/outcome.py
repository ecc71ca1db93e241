"""``loopkit requests wait``: block until a request leaves ``open``, read the record, report.

The outcome always comes from the record itself, never from a request vanishing from the
open list (a change request, a timeout and an approval all leave it).
"""

from __future__ import annotations

import threading
import time

from loopkit.errors import EXIT_ABORTED, EXIT_BLOCKED, EXIT_CONFLICT, EXIT_OK
from loopkit.requests.answer import outcome_of
from loopkit.watch.folder import FolderWatch
from loopkit.watch.waits import wait_until

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

EXIT_BY_OUTCOME = {
    "approved": EXIT_OK,
    "chosen": EXIT_OK,
    "rejected": EXIT_ABORTED,
    "aborted": EXIT_ABORTED,
    "expired": EXIT_ABORTED,  # nobody answered in time: nothing was approved or chosen
    "unblocked": EXIT_ABORTED,  # lifted by hand without an answer: no go-ahead either
    "dismissed": EXIT_ABORTED,  # closed because nobody will answer it: no go-ahead
    "changes_requested": EXIT_CONFLICT,
    "open": EXIT_BLOCKED,
}


def wait_for(
    store: RequestStore,
    request_id: str,
    *,
    timeout: float | None,
    stop: threading.Event | None = None,
) -> Request:
    """The record once it is no longer open, or as it is when ``timeout`` runs out."""
    record = store.load(request_id)
    if not record.is_open:
        return record
    wake = threading.Event()
    stop = stop or threading.Event()
    deadline = None if timeout is None else time.monotonic() + timeout

    def look() -> Request | None:
        fresh = store.load(request_id)
        return fresh if not fresh.is_open or stop.is_set() else None

    with FolderWatch([store.folder], wake) as watch:
        return wait_until(look, watch, wake, deadline=deadline) or store.load(request_id)


def exit_code(record: Request) -> int:
    return EXIT_BY_OUTCOME[outcome_of(record)]
