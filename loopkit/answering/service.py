"""The one door an answer comes in by (SPEC section 27): every surface — ``loopkit reply``,
``unblock`` and ``dismiss``, the Telegram and Slack relays, the web inbox, the Python API —
turns its input into one call of :class:`Answering` and its result into its own reply.

What happens here, in this order, for every answer:

1. **Who.** :meth:`~loopkit.answering.who.Answerer.check`: an agent's process, a browser
   driven by one, a chat or user not allowed — refused (exit 77) before anything is read.
2. **Where.** The request is found on this machine (the assembling workspace's store first,
   then every registered one's) or, with a fleet, on another machine. When its workspace
   lists ``[[escalation.people]]``, only they answer (SPEC §29,
   :meth:`~loopkit.answering.who.Answerer.listed`), recorded under their name.
3. **The second tap.** Approving a P0 request (a gate, ``--irreversible``, the supervisor's
   destructive asks) is recorded only when the surface says it was confirmed; otherwise
   nothing is recorded and :class:`Confirm` says what to ask.
4. **Once.** The reply is read (:mod:`loopkit.requests.replies`) and recorded under the
   store's lock and the hub's claim: of many answers exactly one wins; the others get
   :class:`~loopkit.errors.RequestConflict` and the first answer is never touched.
5. **The block goes.** The request's own ``BLOCKED.md`` is removed (never another request's,
   never a human's own pause); another machine's owner lifts its block when it applies the
   answer.
6. **The others are told.** Every surface this process runs (the relays of ``loopkit run``
   and ``loopkit serve``) but the one that answered shows the outcome, once per ending.

A dismissal (nobody will answer) and lifting a block by hand (``loopkit unblock``) come in
by the same door.
"""

from __future__ import annotations

import contextlib
import threading
import time

from loopkit import clock
from loopkit.answering import policy
from loopkit.datarecord import record
from loopkit.errors import (
    BadInput,
    LoopkitError,
    RequestConflict,
    RequestNotFound,
    UsageError,
)
from loopkit.escalation import adoption, allow, blockfile
from loopkit.log import get_logger
from loopkit.message import clean, fold
from loopkit.requests.answer import apply_reply, dismiss_record, outcome_of, unblocked_by_hand
from loopkit.requests.irreversible import confirm_question, needs_second_tap
from loopkit.requests.reading import told_back

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from loopkit.answering.policy import Overridden
    from loopkit.answering.who import Answerer
    from loopkit.config.people import Person
    from loopkit.fleet import Hubs
    from loopkit.message import Message
    from loopkit.requests.locate import Stores
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

    class Teller(Protocol):
        """A surface that shows how a request ended (the Telegram message edited, the Slack
        message updated …)."""

        via: str

        def show_outcome(self, record: Request) -> None: ...


log = get_logger("loopkit.answer")

# What an answer recorded while the fleet's database could not be reached is told (SPEC §28).
FLEET_UNREACHABLE = (
    "recorded here; the fleet is unreachable: it stands only if nobody answered elsewhere"
)


@record(frozen=True, slots=True)
class Answered:
    """An answer recorded: the record as answered, the SPEC's decision JSON (section 4),
    whether it was a review's *Defer* (the request stays open), the local store that holds
    it (None: another machine's), and whether its ``BLOCKED.md`` was removed here."""

    record: Request
    decision: dict[str, Any]
    deferred: bool
    store: RequestStore | None
    lifted: bool
    # Recorded here while the fleet's database could not be reached: it stands only if
    # nobody answered elsewhere (the follower settles it when the database is back).
    provisional: bool = False

    @property
    def reading(self) -> str:
        """How the reply was read, told back (``→ B) Skip the task (letter B)``)."""
        return told_back(self.record)

    @property
    def caveat(self) -> str | None:
        """What every surface tells the human with an answer recorded here only (SPEC §28),
        or None."""
        return FLEET_UNREACHABLE if self.provisional else None


@record(frozen=True, slots=True)
class Confirm:
    """Nothing recorded: approving this request takes a second, confirming tap."""

    record: Request
    question: str  # "Approve `rm -rf build`? This cannot be undone."


@record(frozen=True, slots=True)
class Dismissed:
    record: Request
    removed: bool  # its BLOCKED.md was removed here
    machine: str | None = None  # the machine that holds it, when another one does

    @property
    def message(self) -> str:
        lifted = "; BLOCKED.md removed" if self.removed else ""
        where = f" on {self.machine} (it lifts its block)" if self.machine else ""
        return f"request {self.record.request_id} dismissed{where}{lifted}"


@record(frozen=True, slots=True)
class Unblocked:
    message: str
    answered: Answered | None = None  # with a reply: the answer recorded

    @property
    def decision(self) -> dict[str, Any] | None:
        return self.answered.decision if self.answered is not None else None

    @property
    def reading(self) -> str | None:
        return self.answered.reading if self.answered is not None else None


class Answering:
    """Answers, dismissals and lifted blocks for one process.

    ``stores`` are the machine's registered workspaces, ``hubs`` the fleets (other machines'
    requests), ``here`` the assembling workspace's own store (looked at first; None for
    ``serve``). Surfaces that can show an outcome register with :meth:`add_teller`."""

    def __init__(self, *, stores: Stores, hubs: Hubs, here: RequestStore | None = None) -> None:
        self.stores = stores
        self.hubs = hubs
        self.here = here
        self._tellers: list[Teller] = []
        self._told: set[tuple[str, ...]] = set()
        self._telling: list[threading.Thread] = []  # background tellers still at work
        self._lock = threading.Lock()

    # --- finding --------------------------------------------------------------------------

    def holder(self, request_id: str) -> RequestStore | None:
        """The local store that holds ``request_id`` (None: not on this machine)."""
        return self.stores.holding(request_id, self.here)

    def find(self, request_id: str) -> Request | None:
        """The request wherever it is — this machine's workspaces, else the fleets' — or
        None (unknown, or unreadable)."""
        with contextlib.suppress(LoopkitError, OSError, ValueError):
            store = self.holder(request_id)
            if store is not None:
                return store.load(request_id)
        found = self.hubs.find(request_id)
        return found[1].record if found else None

    def people_of(self, store: RequestStore) -> tuple[Person, ...]:
        """The ``[[escalation.people]]`` of ``store``'s workspace (none: anyone allowed)."""
        try:
            return self.stores.place(store.workspace.root).config.escalation.people
        except (LoopkitError, OSError):
            return ()

    def people_for(self, request_id: str) -> tuple[Person, ...]:
        """The people of the workspace that holds ``request_id`` (none when it is not on this
        machine)."""
        try:
            store = self.holder(request_id)
        except (LoopkitError, OSError):
            return ()
        return self.people_of(store) if store is not None else ()

    def message_of(self, record: Request) -> Message:
        """The request's five lines, as they were sent (with its repository's name)."""
        try:
            store = self.holder(record.request_id) or self.here
        except Exception:
            store = self.here
        return record.message(store.workspace.repo_name() if store else "loopkit")

    def _not_found(self, request_id: str) -> RequestNotFound:
        where = "on this machine or in the fleet" if self.hubs.fleets() else "on this machine"
        return RequestNotFound(
            f"no request {request_id!r} {where}; `loopkit inbox` lists the open ones"
        )

    # --- answering ------------------------------------------------------------------------

    def answer(
        self,
        request_id: str,
        reply: str,
        who: Answerer,
        *,
        confirmed: bool,
        expected_updated_at: str | None = None,
    ) -> Answered | Confirm:
        """Record ``reply`` to ``request_id`` for ``who`` (see the module for the order).

        ``confirmed``: the surface asked the second tap already (or needs none: a reply
        typed on the command line is deliberate). Raises AgentAnswer / NotAllowed (77),
        UsageError (an empty reply, a bad ``expected_updated_at``), RequestNotFound (66),
        RequestConflict (4: answered already, or changed since ``expected_updated_at``)."""
        who.check()
        reply = _checked_reply(reply, expected_updated_at)
        store = self.holder(request_id)
        if store is None:
            found = self.hubs.find(request_id)
            if found is None:
                raise self._not_found(request_id)  # before any lock: nothing is created
            hub, remote = found
            who.check_about(remote.record)
            if not confirmed and needs_second_tap(remote.record, reply):
                return Confirm(remote.record, confirm_question(remote.record, reply))
            done = hub.answer_remote(remote, reply, by=who.by, via=who.via, about=who.about)
            answered = Answered(done.record, done.decision, done.deferred, None, False)
        else:
            who = who.listed(self.people_of(store))
            current = _current(store, request_id)
            request_id = current.request_id
            who.check_about(current)
            if not confirmed and needs_second_tap(current, reply):
                return Confirm(current, confirm_question(current, reply))
            answered = self._record(store, request_id, reply, who, expected_updated_at)
        answered_record = answered.record
        res = answered_record.resolution
        log.info(
            "answer",
            request_id=request_id,
            by=who.by,
            via=who.via,
            status="deferred" if answered.deferred else answered_record.status,
            outcome=None if answered.deferred else outcome_of(answered_record),
            decision=res.parsed_decision if res and not answered.deferred else None,
            kind=answered_record.kind,
            question=fold(answered_record.prompt),
            command=(answered_record.gate or {}).get("command"),
            workspace=str(answered.store.workspace.root) if answered.store else None,
            msg=f"{who.via}: {who.by} answered {request_id}",
        )
        if answered.store is not None:
            allow.on_answer(answered.store.workspace.root, answered_record, answered.store)
        if not answered.deferred:
            self.tell(answered.record, skip=who.via, background=True)
        return answered

    def _record(
        self,
        store: RequestStore,
        request_id: str,
        reply: str,
        who: Answerer,
        expected_updated_at: str | None,
    ) -> Answered:
        outcome: list[Any] = []
        claimed: list[bool] = []

        def record_it(current: Request) -> None:
            who.check_about(current)  # under the lock, on the record as it is now
            outcome.append(apply_reply(current, reply, by=who.by, via=who.via, about=who.about))
            # With a fleet the answer is claimed fleet-wide first: exactly one wins (SPEC §13).
            claimed.append(store.hub.claim(store.workspace, current))

        store.update(request_id, record_it, expected_updated_at=expected_updated_at)
        done = outcome[0]
        lifted = False
        if not done.deferred:
            # The block goes, supervised or not: a waiting supervisor sees the answer either
            # way and hands it on once.
            lifted = blockfile.remove_block(store.workspace.blocked, done.record)
        provisional = bool(claimed) and not claimed[-1]
        return Answered(done.record, done.decision, done.deferred, store, lifted, provisional)

    def dismiss(self, request_id: str, who: Answerer, *, reason: str | None = None) -> Dismissed:
        """Close ``request_id``, which nobody will answer (SPEC §16): never an answer.
        RequestNotFound (66), RequestConflict (4: closed already, the first ending stands)."""
        who.check()
        store = self.holder(request_id)
        if store is None:
            found = self.hubs.find(request_id)
            if found is None:
                raise self._not_found(request_id)
            hub, remote = found
            closed = hub.dismiss_remote(remote, by=who.by, via=who.via, reason=reason)
            done = Dismissed(closed, False, remote.machine)
        else:

            def close(current: Request) -> None:
                dismiss_record(current, by=who.by, via=who.via, reason=reason)
                store.hub.claim(store.workspace, current)  # fleet-wide, as an answer is

            closed = store.update(request_id, close)
            done = Dismissed(closed, blockfile.remove_block(store.workspace.blocked, closed))
        log.info(
            "dismiss",
            request_id=request_id,
            by=who.by,
            via=who.via,
            reason=reason,
            workspace=str(store.workspace.root) if store is not None else None,
            msg=f"{who.via}: {who.by} dismissed {request_id}",
        )
        self.tell(done.record, skip=who.via, background=True)
        return done

    def unblock(self, store: RequestStore, who: Answerer, *, reply: str | None = None) -> Unblocked:
        """Lift the block of ``store``'s workspace (``loopkit unblock``): with ``reply``,
        answer its request first (as :meth:`answer`, confirmed: typed on purpose); without,
        resolve it as "unblocked by hand". Then ``BLOCKED.md`` goes — only if it still
        names what it named when this began."""
        who.check()
        path = store.workspace.blocked
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
        marked = blockfile.request_id_of(path)
        request_id = adoption.block_request(path, store)
        answered: Answered | None = None
        if reply is not None:
            if request_id is None:
                raise RequestNotFound(
                    f"{path} names no loopkit request to answer; delete it to unblock"
                )
            try:
                result = self.answer(request_id, reply, who, confirmed=True)
            except RequestConflict as conflict:
                if store.load(request_id).status == "expired":
                    raise  # its message already says how to lift the block
                hint = "`loopkit unblock` without --reply lifts the block"
                raise RequestConflict(f"{conflict}; {hint}") from None
            assert isinstance(result, Answered)  # confirmed: never a Confirm
            answered = result
            what = "deferred (it stays open)" if result.deferred else "answered"
            message = f"request {request_id} {what}; {path.name} removed"
        elif request_id is not None:
            message = self._lift(store, request_id, who, path.name)
        else:
            message = f"{path.name} removed (it named no loopkit request)"
        if blockfile.request_id_of(path) == marked:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return Unblocked(message, answered)

    def _lift(self, store: RequestStore, request_id: str, who: Answerer, name: str) -> str:
        """Resolve ``request_id`` as unblocked by hand, if it is open."""
        try:
            current = store.load(request_id)
        except RequestNotFound:
            return f"request {request_id} not found; {name} removed"
        if current.status != "open":
            return f"request {request_id} was already {current.status}; {name} removed"
        ending = unblocked_by_hand(request_id, by=who.by, via=who.via)
        lifted, closed = store.resolve(request_id, ending)
        if closed:
            log.info(
                "lifted",
                request_id=request_id,
                by=who.by,
                via=who.via,
                workspace=str(store.workspace.root),
                msg=f"{who.via}: {who.by} lifted the block of {request_id} by hand",
            )
        self.tell(lifted, skip=who.via, background=True)
        return f"request {request_id} resolved as unblocked by hand; {name} removed"

    def override(self, request_id: str, who: Answerer) -> Overridden:
        """A human's override of a ``[[policy.answers]]`` answer (SPEC §30): the request is
        asked again as a normal question if the run that asked has not moved on, else the
        override is left for the next run (:func:`loopkit.answering.policy.override`)."""
        who.check()
        store = self.holder(request_id)
        if store is None:
            if self.hubs.find(request_id) is not None:
                raise RequestConflict(
                    f"request {request_id} is another machine's: override it there (`loopkit "
                    f"reply --request-id {request_id} --reply override` on that machine)"
                )
            raise self._not_found(request_id)
        return policy.override(store, store.load(request_id), who, None)

    # --- telling the others ---------------------------------------------------------------

    def add_teller(self, teller: Teller) -> None:
        """A surface of this process that shows outcomes (a relay)."""
        with self._lock:
            if teller not in self._tellers:
                self._tellers.append(teller)

    def tell(self, record: Request, *, skip: str | None = None, background: bool = False) -> None:
        """Show how ``record`` ended on every surface of this process but ``skip`` (the one
        that answered shows it itself) — once per surface and ending, however often asked.
        ``background``: each in a thread of its own (an answer never waits on a network)."""
        if record.is_open:
            return
        ended = record.resolution.resolved_at if record.resolution else None
        with self._lock:
            due = []
            for teller in self._tellers:
                key = (record.request_id, record.status, str(ended), teller.via)
                if teller.via != skip and key not in self._told:
                    self._told.add(key)
                    due.append(teller)
        for teller in due:
            if background:
                thread = threading.Thread(target=_show, args=(teller, record), daemon=True)
                with self._lock:
                    self._telling = [t for t in self._telling if t.is_alive()]
                    self._telling.append(thread)
                thread.start()
            else:
                _show(teller, record)

    def finish(self, timeout: float) -> None:
        """Let the telling under way end before the process does, for at most ``timeout``
        seconds in all: a follow-up claimed in a record (SPEC §29) and cut off by the exit
        would be told by nobody."""
        deadline = time.monotonic() + timeout
        with self._lock:
            telling = list(self._telling)
        for thread in telling:
            thread.join(max(0.0, deadline - time.monotonic()))


def _current(store: RequestStore, request_id: str) -> Request:
    """The request ``request_id`` — or, when its record cannot be read and its block was
    asked again in its place, that one: a tap on the first message still answers."""
    try:
        return store.load(request_id)
    except BadInput:
        replacement = store.replacing(request_id)
        if replacement is None:
            raise
        return replacement


def _show(teller: Teller, record: Request) -> None:
    try:
        teller.show_outcome(record)
    except Exception as exc:  # a surface that cannot show it must not fail the answer
        log.warning("outcome_not_shown", via=teller.via, msg=f"{teller.via}: {exc!r}")


def _checked_reply(reply: str, expected_updated_at: str | None) -> str:
    reply = clean(reply)
    if not reply.strip():
        # An unset variable (`--reply "$ANSWER"`) must not use up the one answer.
        raise UsageError("empty reply: nothing to record; give the answer (a letter, a label, "
                         "your words), or lift the block with `loopkit unblock`")  # fmt: skip
    if expected_updated_at is not None:
        try:
            clock.parse_iso(expected_updated_at)
        except ValueError:
            raise UsageError(
                f"--expected-updated-at {expected_updated_at!r} is not a time; pass the "
                "record's updated_at as read (e.g. 2026-12-02T13:11:06.123456Z)"
            ) from None
    return reply
