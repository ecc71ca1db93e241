"""The blocked phase (``BlockedPhase.run``) in process, on a fake clock: it waits (on the real
folder watch, never a sleep loop) until BLOCKED.md goes or the request is answered, and
enforces the request's ``timeout_default`` meanwhile (SPEC section 6).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeClock, FakeRunner, loop_config, supervisor

from loopkit.answering import answer
from loopkit.clock import parse_iso
from loopkit.errors import EXIT_ABORTED, EXIT_BLOCKED, EXIT_SIGTERM
from loopkit.requests.record import Request
from loopkit.supervisor import triggers
from loopkit.supervisor.loop import Supervisor
from loopkit.supervisor.parts import CONTINUE, Step
from loopkit.watch.folder import FolderWatch

from helpers import wait_until

pytestmark = pytest.mark.usefixtures("no_subprocesses")

TASK = "prices in cents"


class Blocked:
    """A supervisor blocked on its own question (verify failed three times on ``TASK``)."""

    def __init__(self, ws: Path, *, exit_on_block: bool = False, **escalation: Any) -> None:
        self.ws = ws
        self.clock = FakeClock()
        runner = FakeRunner(self.clock, {})  # no script: the blocked phase runs no command
        (ws / "PLAN.md").write_text(f"- [ ] {TASK}\n- [ ] totals\n")
        config = loop_config(ws, task_file="PLAN.md", escalation=escalation)
        self.sup: Supervisor = supervisor(config, self.clock, runner, exit_on_block=exit_on_block)
        self.sup.parts.state.task = TASK
        self.sup.parts.state.failures = 3
        failed = [{"iteration": n, "reason": "verify exit 1", "signature": "FAILED"}
                  for n in (1, 2, 3)]  # fmt: skip
        asked = triggers.verify_failures(
            task=TASK,
            failures=3,
            command="pytest",
            last_output="FAILED",
            failed=failed,
            iteration=3,
        )
        escalated = self.sup.parts.escalator.escalate(asked)
        self.request_id = escalated.request.request_id
        state = self.sup.parts.state
        state.status, state.open_request = "blocked", self.request_id
        self.sup.parts.save()

    @property
    def blocked(self) -> Path:
        return self.ws / "BLOCKED.md"

    def record(self) -> Request:
        return self.sup.parts.store.load(self.request_id)

    def at(self, seconds: float, action: Callable[[], object]) -> None:
        """``action`` then, and the wake-up the folder watch gives on a change."""

        def act() -> None:
            action()
            self.sup.parts.wake.set()

        self.clock.at(seconds, act)

    def reply(self, seconds: float, text: str) -> None:
        self.at(seconds, lambda: answer(self.sup.parts.store, self.request_id, text,
                                        by="ana", via="cli"))  # fmt: skip

    def run(self) -> Step:
        parts = self.sup.parts
        with FolderWatch([parts.workspace.root, parts.workspace.requests_dir], parts.wake) as w:
            parts.watch = w
            try:
                return self.sup.blocked.run(resend=False)
            finally:
                parts.watch = None

    def saved(self) -> dict[str, Any]:
        data = json.loads((self.ws / ".loopkit" / "state.json").read_text())
        assert isinstance(data, dict)
        return data

    def deadline_passed_by(self, minutes: float) -> timedelta:
        """How far past ``minutes`` after the question was asked the fake time is now."""
        asked = parse_iso(self.record().asked_at)
        return self.clock.now() - (asked + timedelta(minutes=minutes))


def test_it_waits_until_blocked_md_is_gone_then_resumes(ws: Path) -> None:
    block = Blocked(ws, timeout_minutes=600.0)
    block.at(3600, block.blocked.unlink)
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 3600  # at once: decided by the event, not by a window
    record = block.record()
    assert record.status == "resolved" and record.resolution is not None
    assert (record.resolution.by, record.resolution.via) == ("human", "blocked-file-removed")
    assert record.applied_at is not None
    saved = block.saved()
    assert (saved["status"], saved["open_request"], saved["failures"]) == ("running", None, 0)
    assert saved["pending_decisions"] == []  # lifting a block is not an answer


def test_a_lift_whose_state_save_was_lost_is_lifted_again_and_hands_nothing(ws: Path) -> None:
    """The lift closes its request and stamps it applied in one write, and saves the state
    without fsync (SPEC §20): after a power cut that lost the state, the next start finds the
    block's file gone and its request closed and applied — it resumes, handing nothing on and
    writing the request no more."""
    block = Blocked(ws, timeout_minutes=600.0)
    block.at(60, block.blocked.unlink)
    assert block.run() == CONTINUE
    lifted = block.record()
    state = block.sup.parts.state
    state.status, state.open_request, state.failures = "blocked", block.request_id, 3
    block.sup.parts.save()  # the state as it was before the lift
    assert block.run() == CONTINUE
    assert block.record().to_dict() == lifted.to_dict()  # not written again
    saved = block.saved()
    assert (saved["status"], saved["open_request"], saved["failures"]) == ("running", None, 0)
    assert saved["pending_decisions"] == []


def test_an_editor_saving_blocked_md_is_not_an_unblock(ws: Path) -> None:
    block = Blocked(ws, timeout_minutes=600.0)
    moved = ws / "BLOCKED.md~"

    def save_away() -> None:  # vim backupcopy=no: rename the original away, write anew
        text = block.blocked.read_text()
        block.blocked.rename(moved)
        block.clock.after(0.002, lambda: (block.blocked.write_text(text + "\nnote\n"),
                                          moved.unlink()))  # fmt: skip

    block.at(100, save_away)
    block.at(3600, block.blocked.unlink)
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 3600


def _seen(block: Blocked, how: str | None) -> None:
    """Until the real folder watch has read the change (its reader thread lags the fake time)."""
    watch = block.sup.parts.watch
    assert watch is not None
    wait_until(lambda: watch.vanished(block.blocked) == how, what=f"the watch to see {how}")


def test_moved_out_of_the_folder_is_an_unblock_at_once(ws: Path, tmp_path: Path) -> None:
    # An IN_MOVED_FROM no IN_MOVED_TO pairs with: BLOCKED.md left the folder (SPEC section 20).
    block = Blocked(ws, timeout_minutes=600.0)

    def move_out() -> None:
        block.blocked.rename(tmp_path / "answered.md")
        _seen(block, "moved_out")

    block.at(3600, move_out)
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 3600
    record = block.record()
    assert record.status == "resolved" and record.resolution is not None
    assert record.resolution.via == "blocked-file-removed"


def test_a_rename_inside_the_folder_is_never_an_unblock(ws: Path) -> None:
    # `mv BLOCKED.md BLOCKED.done.md`, an editor's safe-write: the file is there under
    # another name (SPEC §27). The wait goes on, however long; the name coming back and
    # then being removed is the unblock.
    block = Blocked(ws, timeout_minutes=6000.0)
    renamed = ws / "BLOCKED.done.md"

    def rename_within() -> None:
        block.blocked.rename(renamed)
        _seen(block, "renamed")

    block.at(3600, rename_within)
    block.at(7200, lambda: renamed.rename(block.blocked))
    block.at(9000, block.blocked.unlink)
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 9000
    assert block.record().status == "resolved"


@pytest.mark.parametrize(("how", "gap"), [("moved_out", 60.0), ("deleted", 60.0)])
def test_an_editor_moving_or_deleting_the_original_then_writing_anew_is_not_an_unblock(
    ws: Path, tmp_path: Path, how: str, gap: float
) -> None:
    # vim with `backupdir` elsewhere on the same file system renames the original out of the
    # folder; with it on another file system it copies, deletes and writes anew. Its swap
    # file beside BLOCKED.md says an editor is at work: neither is an unblock, however long
    # the new file takes (a minute here).
    block = Blocked(ws, timeout_minutes=600.0)
    backup = tmp_path / "backup" / "BLOCKED.md~"
    backup.parent.mkdir()
    swap = ws / ".BLOCKED.md.swp"

    def save() -> None:
        text = block.blocked.read_text()
        swap.write_bytes(b"b0VIM 9.0")
        if how == "moved_out":
            block.blocked.rename(backup)
        else:
            backup.write_text(text)
            block.blocked.unlink()
        _seen(block, how)
        block.clock.after(gap, lambda: (block.blocked.write_text(text + "\nnote\n"),
                                        swap.unlink()))  # fmt: skip

    block.at(100, save)
    block.at(3600, block.blocked.unlink)
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 3600


def test_a_timeout_abort_exits_3_and_keeps_the_block(ws: Path) -> None:
    block = Blocked(ws, timeout_minutes=30.0, timeout_action="abort")
    step = block.run()
    assert (step.action, step.code) == ("exit", EXIT_ABORTED)
    assert abs(block.deadline_passed_by(30)) < timedelta(milliseconds=10)  # on time
    assert block.blocked.exists()
    record = block.record()
    assert record.status == "expired" and record.resolution is not None
    assert (record.resolution.by, record.resolution.action) == ("timeout", "abort")
    saved = block.saved()
    assert (saved["status"], saved["last_exit"]) == ("aborted", EXIT_ABORTED)
    assert saved["pending_decisions"] == []  # a timeout is never a human's decision


@pytest.mark.parametrize("action", ["skip", "retry"])
def test_a_timeout_skip_or_retry_lifts_the_block_and_goes_on(ws: Path, action: str) -> None:
    block = Blocked(ws, timeout_minutes=30.0, timeout_action=action)
    assert block.run() == CONTINUE
    assert abs(block.deadline_passed_by(30)) < timedelta(milliseconds=10)
    assert not block.blocked.exists()
    record = block.record()
    assert record.status == "expired" and record.resolution is not None
    assert (record.resolution.by, record.resolution.action) == ("timeout", action)
    saved = block.saved()
    assert block.sup.parts.skipped.tasks() == ([TASK] if action == "skip" else [])
    assert (saved["status"], saved["failures"], saved["pending_decisions"]) == ("running", 0, [])


def test_a_timeout_queue_keeps_waiting(ws: Path) -> None:
    block = Blocked(ws, timeout_minutes=30.0, timeout_action="queue")
    seen: list[Request] = []
    block.clock.at(3 * 3600, lambda: seen.append(block.record()))
    block.at(5 * 3600, block.blocked.unlink)
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 5 * 3600
    [meanwhile] = seen
    assert meanwhile.status == "open" and meanwhile.timed_out_at is not None
    assert block.record().status == "resolved"  # lifted by hand at last, not expired


def test_a_humans_answer_is_applied(ws: Path) -> None:
    block = Blocked(ws, timeout_minutes=30.0, timeout_action="abort")
    block.reply(20 * 60, "A, use integer cents everywhere")
    assert block.run() == CONTINUE
    assert block.clock.elapsed == 20 * 60  # woken by the answer
    assert not block.blocked.exists()
    record = block.record()
    assert record.status == "resolved" and record.applied_at is not None
    saved = block.saved()
    [decision] = saved["pending_decisions"]
    assert (decision["parsed_decision"], decision["note"], decision["by"]) == (
        "retry", "use integer cents everywhere", "ana")  # fmt: skip
    assert (saved["status"], saved["open_request"], saved["failures"]) == ("running", None, 0)
    last = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
    assert last == {**decision, "decisions": [decision]}  # the latest, and all of them


def test_the_answer_skip_skips_the_task(ws: Path) -> None:
    block = Blocked(ws)
    block.reply(60, "B")
    assert block.run() == CONTINUE
    [skipped] = block.sup.parts.skipped.load()
    assert (skipped.task, skipped.request_id) == (TASK, block.request_id)


def test_the_answer_abort_exits_3(ws: Path) -> None:
    block = Blocked(ws)
    block.reply(60, "C")
    step = block.run()
    assert (step.action, step.code) == ("exit", EXIT_ABORTED)
    saved = block.saved()
    assert (saved["status"], saved["open_request"], saved["pending_decisions"]) == (
        "aborted", None, [])  # fmt: skip
    assert block.record().applied_at is not None  # never applied a second time


def test_exit_on_block_prints_the_head_and_exits_2(
    ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = Blocked(ws, exit_on_block=True)
    capsys.readouterr()
    step = block.run()
    assert (step.action, step.code) == ("exit", EXIT_BLOCKED)
    head = "\n".join(block.blocked.read_text().splitlines()[:30])
    assert "Verify failed 3 times in a row on task 'prices in cents'" in head
    assert head in capsys.readouterr().out
    assert block.clock.elapsed == 0 and block.blocked.exists()
    assert block.saved()["status"] == "blocked" and block.saved()["last_exit"] == EXIT_BLOCKED


def test_a_stop_ends_the_wait(ws: Path) -> None:
    block = Blocked(ws)
    block.clock.at(90, block.sup.request_stop)
    step = block.run()
    assert (step.action, step.code) == ("exit", EXIT_SIGTERM)
    assert block.clock.elapsed == 90
    assert block.blocked.exists() and block.record().status == "open"


def test_an_answer_given_while_no_supervisor_waited_is_applied_at_start(ws: Path) -> None:
    block = Blocked(ws)
    answer(block.sup.parts.store, block.request_id, "A", by="ana", via="cli")
    assert not block.blocked.exists()  # an answer lifts its block
    assert block.sup.blocked.apply_answered() == CONTINUE
    [decision] = block.saved()["pending_decisions"]
    assert decision["parsed_decision"] == "retry"
    assert block.record().applied_at is not None
    assert block.sup.blocked.apply_answered() == CONTINUE  # once
    assert block.sup.parts.state.pending_decisions == [decision]
    block.sup.parts.state.pending_decisions = []
    block.sup.blocked.apply_answered()
    assert block.sup.parts.state.pending_decisions == []
