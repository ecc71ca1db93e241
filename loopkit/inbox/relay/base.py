"""What the Telegram and Slack relays share (SPEC §27): the thread's life under a lease, and
the road from a human's tap or reply to the answering service.

- :class:`LeasedThread` — one thread per bot (or app) and machine: it starts working the
  first time this process waits on a block (``active``), takes the lease — an ``flock`` in
  ``LOOPKIT_HOME``, or the fleet's advisory lock, as the hub keeps them — serves until
  stopped, and hands the lease on. The subclass says what serving is (long-polling, a
  Socket Mode connection).
- :class:`AnswerRouter` — a relay's router: it finds requests and their five lines through
  the service, answers through it (:meth:`AnswerRouter.decide`), and is one of the service's
  tellers: an answer from any other surface of this process edits its message.
"""

from __future__ import annotations

import threading

from loopkit.answering.service import Confirm
from loopkit.datarecord import record
from loopkit.errors import LoopkitError, RequestConflict
from loopkit.log import get_logger
from loopkit.message import fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.answering.service import Answered, Answering
    from loopkit.answering.who import Answerer
    from loopkit.message import Message
    from loopkit.requests.hub import Lease
    from loopkit.requests.record import Request

log = get_logger("loopkit.phone")


class LeasedThread:
    """A relay's thread: waits for ``active``, takes ``lease``, runs :meth:`serve`."""

    thread_name = "loopkit-relay"

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        self.active = threading.Event()
        self.stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name=self.thread_name)
            self._thread.start()

    def _run(self) -> None:
        if not self.active.is_set():
            self.active.wait()  # not before this process first waits on a block
        if self.stopped.is_set():
            return
        self.lease.take()
        try:
            if not self.stopped.is_set():
                self.serve()
        finally:
            self.lease.release()  # a stopped relay hands the lease on

    def serve(self) -> None:
        raise NotImplementedError


@record(frozen=True, slots=True)
class Decided:
    """What came of a human's reply: ``answered`` (recorded), ``confirm`` (a second tap is
    needed: nothing recorded), ``already`` (answered before: why, for the human) with the
    record as it stands, or ``failed`` (not recorded: why)."""

    answered: Answered | None = None
    confirm: Confirm | None = None
    already: str | None = None
    record: Request | None = None
    failed: str | None = None

    @property
    def caveat(self) -> str | None:
        """What the human must be told with an answer recorded here only (SPEC §28)."""
        return self.answered.caveat if self.answered else None


class AnswerRouter:
    """The part of a relay's router that answers: ``via`` names the surface."""

    via = "relay"

    def __init__(self, answering: Answering) -> None:
        self.answering = answering
        answering.add_teller(self)

    def find(self, request_id: str) -> Request | None:
        return self.answering.find(request_id)

    def message_of(self, record: Request) -> Message:
        return self.answering.message_of(record)

    def decide(self, request_id: str, reply: str, who: Answerer, *, confirmed: bool) -> Decided:
        """Answer ``request_id`` with ``reply`` through the service, never raising."""
        try:
            done = self.answering.answer(request_id, reply, who, confirmed=confirmed)
        except RequestConflict as conflict:  # "already resolved by … via …"
            return Decided(already=fold(str(conflict), 190), record=self.find(request_id))
        except LoopkitError as exc:
            log.warning(f"{self.via}_answer_failed", msg=f"{self.via}: answer not applied: {exc}")
            return Decided(failed=str(exc))
        if isinstance(done, Confirm):
            return Decided(confirm=done, record=done.record)
        return Decided(answered=done, record=done.record)

    def show_outcome(self, record: Request) -> None:
        raise NotImplementedError
