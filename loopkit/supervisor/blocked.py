"""``loopkit run`` while blocked: wait for the answer or for BLOCKED.md to go, then act on it.

The wait is a folder watch (:func:`loopkit.watch.waits.wait_unblock`), never a sleep loop; the
request's ``timeout_default`` is enforced meanwhile (``abort`` exits 3 and keeps the block,
``skip``/``retry`` go on, ``queue`` keeps waiting). A human's decision reaches the next agent
run; the supervisor's own *Skip* and *Abort* choices are acted on here. The supervisor owns
one :class:`BlockedPhase`; :meth:`BlockedPhase.run` returns a
:class:`~loopkit.supervisor.parts.Step`.
"""

from __future__ import annotations

import contextlib
import shlex
import time

from loopkit import atomicfile
from loopkit.clock import iso_seconds, parse_iso
from loopkit.datarecord import replace
from loopkit.errors import EXIT_ABORTED, EXIT_BLOCKED, BadInput, LoopkitError
from loopkit.escalation import adoption, blockfile, delivery
from loopkit.escalation.blockfile import Escalation
from loopkit.log import get_logger
from loopkit.message import fold
from loopkit.requests.answer import decision_of, is_human_decision, timed_out, unblocked_by_hand
from loopkit.requests.models import Status
from loopkit.requests.record import new_id
from loopkit.supervisor import triggers
from loopkit.supervisor.parts import CONTINUE, KEEP_WAITING
from loopkit.supervisor.stuck_watch import block_ended
from loopkit.watch.waits import wait_unblock
from loopkit.workspace.state import LoopStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Literal

    from loopkit.requests.record import Request
    from loopkit.supervisor.parts import Parts, Step
    from loopkit.watch.waits import Outcome

log = get_logger("loopkit.supervisor")

ANSWER_SLACK_NS = 2_000_000_000  # mtimes are coarse on some file systems: look 2 s further back


class BlockedPhase:
    """The loop while blocked: ``run()`` returns once the block has ended (or to exit)."""

    def __init__(self, parts: Parts, *, print_head: Callable[[str], object]) -> None:
        self.parts = parts
        self.print_head = print_head
        self._announced_folder = False
        self._announced_pause = False

    def apply_answered(self) -> Step:
        """At start: an answer given while no supervisor waited on its block (a bare
        ``escalate`` answered with ``unblock --reply``, a ``run.sh`` loop) is handed to the
        next agent run now, once — its BLOCKED.md already gone.

        Only the records written since the last start are read (an answer rewrites its
        record), so a ``run.sh`` loop does not read every request at every iteration. The
        mark moves on once they are handled, with the next state save: a crash before that
        only means reading them again.
        """
        step = CONTINUE
        path = self.parts.workspace.blocked
        started = time.time_ns()  # the file system's time: it is compared with mtimes
        since = self.parts.state.answers_seen_ns - ANSWER_SLACK_NS
        standing = self._block_request() if blockfile.state(path) != "absent" else None
        for request_id in self.parts.store.changed_since(since):
            record = self._load(request_id)
            if record is None or not record.has_own_block:
                continue
            if record.status != "resolved" or _applied(record):
                continue
            if standing == record.request_id:
                continue  # its block stands: the blocked phase applies it
            log.info(
                "answer_found",
                request_id=record.request_id,
                msg=f"request {record.request_id} was answered while no supervisor waited",
            )
            step = self._unblocked(record, removed=False)
            if step.action == "exit":
                return step
        self.parts.state.answers_seen_ns = started
        return step

    def _restored(self, path: Path) -> Request | None:
        """A BLOCKED.md with a marker that names no request standing for a block — its
        record gone, unreadable, never raised as a block, or long since applied — is asked
        (SPEC sections 17 and 28), never waited on in silence. A record that is gone is
        raised again from the file under the id its marker names; otherwise the file is
        adopted as the agent's block under a new id, which its marker then names. None for a
        file without a marker (a human's pause, or an agent's file adopted already)."""
        marked = blockfile.request_id_of(path)
        if marked is None:
            return self._readopted(path)
        if not self.parts.store.path(marked).exists():
            try:
                return self.parts.escalator.restore(adoption.read(path), marked).request
            except LoopkitError as exc:
                log.error("restore_failed", msg=f"cannot raise {path.name} again: {exc}")
                return None
        try:
            why = _not_standing(self.parts.store.load(marked))
        except LoopkitError as exc:
            why = f"its record cannot be read ({exc})"
        if why is None:
            return None
        asked = self.parts.store.replacing(marked)
        if asked is not None:  # asked in its place already (by us before a restart): once
            with contextlib.suppress(OSError):
                blockfile.claim(path, asked.request_id)
            return asked
        why = f"its marker names request {marked}, which {why}"
        return self._adopted(path, why, replaces=marked)

    def _readopted(self, path: Path) -> Request | None:
        """A BLOCKED.md without a marker while the block we were waiting on — the agent's
        file, adopted — has a record that cannot be read: asked again in its place (once),
        never taken for a human's pause. None otherwise."""
        remembered = self.parts.state.open_request
        if remembered is None:
            return None
        try:
            self.parts.store.load(remembered)
            return None
        except BadInput as exc:
            why = f"the record of its request {remembered} cannot be read ({exc})"
        except LoopkitError:
            return None
        asked = self.parts.store.replacing(remembered)
        return asked or self._adopted(path, why, replaces=remembered)

    def _adopted(self, path: Path, why: str, *, replaces: str | None = None) -> Request | None:
        """Ask what the file at ``path`` says (or, for something other than a file, what is
        there) as the agent's block: a request of its own, sent. ``replaces``: the request
        its marker named, which could not be read (a tap on its message answers this one)."""
        state = self.parts.state
        request_id = new_id()
        if blockfile.state(path) == "file":
            written = adoption.read(path)
            try:
                blockfile.claim(path, request_id)
            except OSError as exc:
                log.error("claim_failed", msg=f"cannot mark {path.name} as request "
                          f"{request_id}: {exc}")  # fmt: skip
        else:
            written = Escalation(
                question=f"{path.name} is {blockfile.what(path)}, not a file: what now?",
                context=f"Something other than a regular file is at {path}; loopkit does not "
                "open it. Once answered it is moved aside into .loopkit/ and the loop goes on.",
                attempted=[],
                choices=[],
                trigger="agent-file",
            )
        escalation = triggers.adopted(written, task=state.task, iteration=state.iteration)
        try:
            result = self.parts.escalator.adopt(
                replace(escalation, request_id=request_id), replaces=replaces
            )
        except LoopkitError as exc:
            log.error("adopt_failed", msg=f"cannot ask {path.name}: {exc}")
            return None
        log.warning(
            "block_asked",
            request_id=request_id,
            msg=f"{path.name}: {why} — asked as the agent's block (requests/{request_id}.json)",
        )
        return result.request

    def _block_request(self) -> str | None:
        """The request of the BLOCKED.md there (:func:`adoption.block_request`)."""
        path, store = self.parts.workspace.blocked, self.parts.store
        return adoption.block_request(path, store, self.parts.state.open_request)

    def run(self, *, resend: bool) -> Step:
        path = self.parts.workspace.blocked
        state = self.parts.state
        kind = blockfile.state(path)
        present = kind != "absent"
        # A BLOCKED.md names its request; one without a marker is the agent's when we adopted
        # it, else a human's own pause (the request we remember is stale then). Something
        # other than a file, or gone: the request we remember is the one.
        request_id = self._block_request() if kind == "file" else state.open_request
        record = self._load(request_id)
        if kind == "file" and (record is None or _not_standing(record) is not None):
            record = self._restored(path) or record
            request_id = record.request_id if record is not None else request_id
        if kind == "other":
            if not self._announced_folder:
                self._announced_folder = True
                log.error("blocked_not_a_file", msg=str(blockfile.not_a_file(path)))
            if record is None or not record.is_open or not record.has_own_block:
                # Asked, never waited on in silence (SPEC section 28).
                record = self._adopted(path, "something other than a file is in its place")
                request_id = record.request_id if record is not None else request_id
                if record is not None:
                    state.status, state.open_request = LoopStatus.BLOCKED, request_id
                    self.parts.save()
            if self.parts.options.exit_on_block:
                raise blockfile.not_a_file(path)
        if present and record is None and not self._announced_pause:
            self._announced_pause = True
            log.info(
                "human_pause",
                msg=f"{path.name} names no loopkit request and no agent wrote it: a human's "
                "pause; nothing is sent, the loop waits until it is gone",
            )
        if not present:
            # Lifted before we waited on it (just after we raised it, or while we were down).
            return self._unblocked(record, removed=True)
        if record is not None and record.status == "resolved" and not _applied(record):
            # Answered while no supervisor waited (`loopkit reply`; `run --exit-on-block`).
            return self._unblocked(record, removed=False)
        if record is not None and resend and record.is_open:
            # After a restart: a send cut short by a crash goes out once more, nothing else.
            self.parts.escalator.resume_delivery(record)
        elif record is not None:
            # The agent's question, which its process left to us to send (with
            # --exit-on-block too): now, if the agent's turn ended before we sent it.
            self.parts.escalator.send_left(record)
        if state.status != LoopStatus.BLOCKED or state.open_request != request_id:
            state.status, state.open_request = LoopStatus.BLOCKED, request_id
            self.parts.save()
        if self.parts.options.exit_on_block:
            with contextlib.suppress(OSError):
                self.print_head(blockfile.shown_head(path))
            return self.parts.finish(LoopStatus.BLOCKED, EXIT_BLOCKED, "blocked (--exit-on-block)")
        question = f": {fold(record.prompt, 100)}" if record else ""
        log.info(
            "waiting",
            request_id=request_id,
            msg=f"blocked{question}; waiting for an answer or for {path.name} to go",
        )
        return self._wait(record)

    def _load(self, request_id: str | None) -> Request | None:
        if not request_id:
            return None
        try:
            return self.parts.store.load(request_id)
        except LoopkitError as exc:
            log.warning("request_unreadable", msg=f"open request unreadable: {exc}")
            return None

    def _deadline(self, record: Request | None) -> float | None:
        if record is None or not record.is_open or record.timed_out_at:
            return None
        timeout = record.timeout_default or {}
        try:
            minutes = float(timeout.get("after_minutes") or 0)
            created = parse_iso(record.asked_at)  # from when the human was asked
        except (TypeError, ValueError):
            return None
        if minutes <= 0:
            return None
        clock = self.parts.clock
        remaining = created.timestamp() + minutes * 60 - clock.now().timestamp()
        return clock.monotonic() + max(0.0, remaining)

    def _next_event(self, record: Request | None) -> float | None:
        """The monotonic time of the next thing to do: the expiry, or the next send."""
        events = [self._deadline(record)]
        if record is not None:
            now = self.parts.clock.now()
            due = delivery.next_due(record, self.parts.config.escalation, now)
            if due is not None:
                later = max(0.0, (due.at - now).total_seconds())
                events.append(self.parts.clock.monotonic() + later)
        found = [e for e in events if e is not None]
        return min(found) if found else None

    def _expired(self, record: Request) -> bool:
        deadline = self._deadline(record)
        return deadline is not None and self.parts.clock.monotonic() >= deadline

    def _answered_check(self, record: Request | None) -> Callable[[], bool]:
        if record is None:
            return lambda: False
        path = self.parts.store.path(record.request_id)
        seen: list[tuple[int, int, int] | None] = [None]

        def answered() -> bool:
            try:
                info = path.stat()
            except OSError:
                return False
            # Each write replaces the file (a new inode), so with coarse mtimes two writes in
            # one tick still differ.
            stamp = (info.st_mtime_ns, info.st_ino, info.st_size)
            if stamp == seen[0]:
                return False
            seen[0] = stamp
            fresh = self._load(record.request_id)
            # Resolved, not merely closed: a request that expired with `abort` takes no
            # answer; its block stands until a human lifts it (deletes BLOCKED.md). And
            # never an answer applied before (its BLOCKED.md restored by a checkout, say).
            return fresh is not None and fresh.status == "resolved" and not _applied(fresh)

        return answered

    def _wait(self, record: Request | None) -> Step:
        assert self.parts.watch is not None
        path = self.parts.workspace.blocked
        phone = self.parts.phone()
        slack = self.parts.slack()
        while True:
            if phone is not None:
                phone.active.set()  # long-poll Telegram for taps and replies meanwhile
            if slack is not None:
                slack.active.set()  # and listen to the Slack app's clicks
            try:
                outcome: Outcome = wait_unblock(
                    path,
                    self.parts.watch,
                    self.parts.wake,
                    self.parts.stop,
                    deadline=self._next_event(record),
                    answered=self._answered_check(record),
                    clock=self.parts.clock,
                )
            finally:
                if phone is not None:
                    phone.active.clear()
            if outcome == "stopped":
                return self.parts.stopped()
            if outcome == "timeout" and record is not None and not self._expired(record):
                # A send is due: a retry, the next rung, a reminder. Then wait on.
                self.parts.escalator.deliver(record, reminders=True)
                record = self._load(record.request_id) or record
                continue
            if outcome == "timeout" and record is not None:
                step = self._timed_out(record)
                if step is KEEP_WAITING:  # queue: now without a deadline
                    record = self._load(record.request_id) or record
                    continue
                return step
            return self._unblocked(record, removed=(outcome == "gone"))

    def _timed_out(self, record: Request) -> Step:
        action = str((record.timeout_default or {}).get("action") or "abort")
        minutes = (record.timeout_default or {}).get("after_minutes")
        log.warning(
            "timeout",
            request_id=record.request_id,
            action=action,
            msg=f"no answer after {minutes} min; timeout action: {action}",
        )
        if action == "queue":

            def queued(fresh: Request) -> bool:
                if fresh.is_open:
                    fresh.timed_out_at = iso_seconds(self.parts.clock.now())
                return fresh.is_open

            self.parts.store.update(record.request_id, queued)
            return KEEP_WAITING
        resolution = timed_out(record.request_id, action)
        fresh, changed = self.parts.store.resolve(
            record.request_id, resolution, status=Status.EXPIRED
        )
        if not changed:  # a human answered at the last moment: that answer stands
            return self._unblocked(fresh, removed=False)
        self.parts.announce(fresh, now=action == "abort")
        if action == "abort":
            return self.parts.finish(
                LoopStatus.ABORTED, EXIT_ABORTED, "aborted: timeout action abort"
            )
        self._remove_block(record)
        if action == "skip":
            self._skip_task(record)
        return self._resume()

    def _unblocked(self, record: Request | None, *, removed: bool) -> Step:
        """BLOCKED.md is gone, or the open request was answered."""
        pending = list(self.parts.state.pending_decisions)  # a decision handed on changes it
        lifted: Request | None = None
        if record is not None:
            if removed:
                record, applied, news = self._lifted(record)
                res = record.resolution
                lifted = record if res is not None and res.outcome == "unblocked" and news else None
            else:
                record = self._load(record.request_id) or record
                applied = _applied(record)
                news = not applied  # the record's ending is new: the phone's message shows it
                self._remove_block(record)
            if news:
                self.parts.announce(
                    record,
                    now=record.raised_by == "supervisor"
                    and record.resolution is not None
                    and record.resolution.chosen_option == "abort",
                )
            if not applied and self._apply(record) == "abort":
                # The answer is applied: a restart must not find (and apply) it again, nor
                # hand "abort" to the next agent, and starts the count afresh.
                self.parts.state.open_request = None
                self.parts.state.failures, self.parts.state.failed_iterations = 0, []
                block_ended(self.parts.state)
                finished = self.parts.finish(
                    LoopStatus.ABORTED, EXIT_ABORTED, "aborted by the human's answer"
                )
                self._mark_applied(record)
                return finished
        log.info("unblocked", msg="unblocked; resuming")
        resumed = self._resume(durable=self.parts.state.pending_decisions != pending)
        if lifted is not None:  # audited after the restart: it is not on the way to it
            log.info("lifted", request_id=lifted.request_id, by="human",
                     via="blocked-file-removed",
                     msg=f"{self.parts.store.workspace.blocked.name} removed by hand: request "
                     f"{lifted.request_id} lifted without an answer")  # fmt: skip
        if record is not None and not applied:
            self._mark_applied(record)  # after the state is saved: a crash before re-applies
        if record is not None:
            self._raise_waiting(record)
        return resumed

    def _lifted(self, record: Request) -> tuple[Request, bool, bool]:
        """BLOCKED.md was removed: the request is closed as unblocked by hand (a deferred
        review stays open: lifting the block is not an answer). Returns the record, whether
        its ending counts as applied, and whether that ending is news for the phone.

        Lifting a block hands nothing to the agent, so the request is stamped applied in the
        same write that closes it — one read and one write on the way from the ``rm`` to the
        agent's restart, where there were three of each, durable (SPEC section 20). A crash
        after that write finds it closed and applied: nothing is handed twice. The write is
        not fsynced: a power cut that loses it leaves the block open with its file gone,
        which the next start lifts again, the same way."""
        seen: dict[str, bool] = {"applied": False, "closed": False}
        stamp = iso_seconds(self.parts.clock.now())

        def close(fresh: Request) -> bool:
            seen["applied"] = _applied(fresh)
            if not fresh.is_open or fresh.status == "deferred":
                return False
            resolution = unblocked_by_hand(fresh.request_id, by="human", via="blocked-file-removed")
            fresh.status, fresh.resolution, fresh.applied_at = Status.RESOLVED, resolution, stamp
            seen["closed"] = True
            return True

        fresh = self.parts.store.update(record.request_id, close, durable=False)
        if seen["closed"]:
            return fresh, True, True
        news = fresh.status != "expired" and not seen["applied"]
        return fresh, seen["applied"], news

    def _raise_waiting(self, record: Request) -> None:
        """A question that joined the block that just went, after its request was answered,
        is asked now, as a block of its own (one at a time: the others join it).

        Such a question names the block's request, and was written after it: only records
        written since (less the slack of coarse mtimes) that hold its id are read — not every
        request the workspace ever had, on the path from an answer to the agent's restart."""
        gone = record.request_id
        try:
            since = int(parse_iso(record.created_at).timestamp() * 1e9) - ANSWER_SLACK_NS
        except ValueError:
            since = 0
        found: list[Request] = []
        for request_id in self.parts.store.mentioning(gone, since):
            with contextlib.suppress(LoopkitError):  # a broken one: as `store.all` skips it
                if request_id != gone:
                    found.append(self.parts.store.load(request_id))
        found.sort(key=lambda one: one.created_at)  # the oldest first
        for waiting in found:
            if not waiting.is_open or waiting.block != "joined" or waiting.joined_to != gone:
                continue
            try:
                placed = self.parts.escalator.place(waiting, persisted=True, own=True)
            except LoopkitError as exc:
                log.error("raise_failed", msg=f"cannot raise request {waiting.request_id}: {exc}")
                return
            state = self.parts.state
            state.status, state.open_request = (
                LoopStatus.BLOCKED,
                placed.joined or waiting.request_id,
            )
            self.parts.save()
            if placed.joined is None:
                what = f"asking the question that waited on {gone}: {waiting.prompt}"
                log.info("raised_waiting", request_id=waiting.request_id, msg=what)
                self.parts.escalator.deliver(waiting)
            return

    def _mark_applied(self, record: Request) -> None:
        """Stamp the request: its ending is acted on, and never again."""
        if record.is_open:
            return  # a deferred review: nothing was decided

        def stamp(fresh: Request) -> bool:
            if fresh.applied_at:
                return False
            fresh.applied_at = iso_seconds(self.parts.clock.now())
            return True

        with contextlib.suppress(LoopkitError):
            self.parts.store.update(record.request_id, stamp)

    def _apply(self, record: Request) -> Literal["abort"] | None:
        """Carry a human's decision to the next agent run — if it is for the loop (see
        :func:`answers_the_loop`); act on the supervisor's choices (*Skip* here; *Abort* is
        returned, for the caller to exit, and never handed to an agent)."""
        if not is_human_decision(record):
            return None
        decision = decision_of(record)
        shown = fold(str(decision["parsed_decision"]), 80)
        if record.raised_by == "supervisor" and decision["chosen_option"] == "abort":
            log.info("decision", request_id=record.request_id, decision="abort",
                     msg=f"decision: {shown}")  # fmt: skip
            return "abort"
        if not answers_the_loop(record):
            log.info(
                "decision_not_for_the_loop",
                request_id=record.request_id,
                msg=f"request {record.request_id} ({record.trigger or record.kind}) was asked "
                "outside the loop, for its asker: not handed to the agent",
            )
            return None
        pending = self.parts.state.pending_decisions
        # Applied again after a crash before it was stamped applied: listed once.
        pending[:] = [d for d in pending if d.get("request_id") != record.request_id]
        pending.append(decision)
        try:
            # The latest decision's fields, as before, and every one this run gets.
            latest = {**decision, "decisions": pending}
            atomicfile.write_json(self.parts.workspace.state_dir / "last_decision.json", latest)
        except OSError as exc:
            log.warning("decision_unwritable", msg=f"cannot write last_decision.json: {exc}")
        log.info(
            "decision",
            request_id=record.request_id,
            decision=decision["parsed_decision"],
            msg=f"decision: {shown}",
        )
        if record.raised_by == "supervisor" and decision["chosen_option"] == "skip":
            self._skip_task(record)
        return None

    def _skip_task(self, record: Request) -> None:
        task = self.parts.state.task
        when = iso_seconds(self.parts.clock.now())
        if task and self.parts.skipped.add(task, skipped_at=when, request_id=record.request_id):
            log.info(
                "task_skipped",
                task=task,
                msg=f"skipping task {task!r} (`loopkit unskip {shlex.quote(task)}` takes it back)",
            )

    def _remove_block(self, record: Request) -> None:
        """Remove BLOCKED.md if it is still this request's block (never a human's own). When
        something other than a file stood in its place, the block was this request: what
        is there is moved aside into ``.loopkit/`` (kept for a human to look at, never
        opened), so the loop can tell blocked from unblocked again."""
        path = self.parts.workspace.blocked
        if blockfile.state(path) == "other" and record.block == "adopted":
            try:
                moved = blockfile.move_aside(path, self.parts.workspace.state_dir)
            except OSError as exc:
                log.error("move_aside_failed", msg=f"cannot move {path.name} aside: {exc}")
                return
            log.info("moved_aside", msg=f"{path.name} was in the way: moved to {moved}")
            return
        blockfile.remove_block(path, record)

    def _resume(self, *, durable: bool = True) -> Step:
        """The loop runs again: saved — durably when a decision was handed on (it must be
        in the state before its request is stamped applied). A block lifted with nothing to
        hand on is saved without fsync, on the path to the agent's restart: a power cut
        before the disk has it leaves the block as it was, and the next start lifts it again
        (its request is closed and applied already)."""
        state = self.parts.state
        state.failures, state.failed_iterations = 0, []
        block_ended(state)  # the stuck signals it carried start counting afresh
        state.open_request = None
        state.status = LoopStatus.RUNNING
        self.parts.save(durable=durable)
        return CONTINUE


def _applied(record: Request) -> bool:
    return bool(record.applied_at)


def _not_standing(record: Request) -> str | None:
    """Why ``record`` is not the request of a BLOCKED.md that names it, or None when it is:
    it was raised with a block of its own, and what ended it was not acted on yet."""
    if not record.has_own_block:
        return "was never raised as a block"
    if _applied(record):
        return "was answered and acted on already"
    return None


def answers_the_loop(record: Request) -> bool:
    """Whether ``record``'s answer is for the loop's next agent run (SPEC section 16).

    Yes for what the supervisor or its agent raised (``raised_by``: ``supervisor``,
    ``agent``), and for a block raised for the loop from outside a session (a bare
    ``escalate``, ``ask --block``: the next run of this workspace is the run it answers).
    No for an answer its asker takes itself: an approval bound to one action (a ``gate``,
    a Claude Code hook's call) asked outside the loop, and an ``ask`` without a block of
    its own.
    """
    if not record.has_own_block:
        return False
    return record.raised_by in ("supervisor", "agent") or record.gate is None
