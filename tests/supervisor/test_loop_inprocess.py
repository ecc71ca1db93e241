"""The loop (``Supervisor.run``) in process, on a fake runner and a fake clock: iterations,
the pause, escalating at ``max_verify_failures``, waiting while blocked, finishing, stopping.

Real parts besides: the workspace on disk, the lock, the request store, the escalator
(its channel a recording fake), BLOCKED.md, the folder watch. No process is started.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from fakes import FakeClock, FakeRunner, RecordingChannel, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.errors import EXIT_BLOCKED, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM
from loopkit.escalation import blockfile

pytestmark = pytest.mark.usefixtures("no_subprocesses")

FAILED = "collected 12 items\nFAILED tests/test_prices.py::test_total - AssertionError\n"


def state(ws: Path) -> dict[str, object]:
    data = json.loads((ws / ".loopkit" / "state.json").read_text())
    assert isinstance(data, dict)
    return data


def test_verify_failing_three_times_raises_the_block(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(takes=5), "verify": Run(1, takes=2, output=FAILED)})
    channel = RecordingChannel()
    config = loop_config(ws, pause=10.0, ladder=("slack",))
    sup = supervisor(config, clock, runner, channel=channel, exit_on_block=True)

    assert sup.run() == EXIT_BLOCKED
    assert runner.names() == ["agent", "verify"] * 3
    # The pause between iterations, none after the block was raised.
    assert [c.at for c in runner.calls if c.name == "agent"] == [0, 17, 34]
    assert clock.elapsed == 41
    request_id = blockfile.request_id_of(ws / "BLOCKED.md")
    assert request_id is not None
    record = sup.parts.store.load(request_id)
    assert (record.trigger, record.raised_by) == ("verify-failures", "supervisor")
    assert record.prompt == (
        "Verify failed 3 times in a row on the current task — test_prices.py::test_total: "
        "AssertionError: how do I go on?"
    )  # the failing test and its first error line (SPEC §25), not the runner's summary
    assert "> tests/test_prices.py::test_total\n> AssertionError" in record.situation
    assert [o.value for o in record.options] == ["retry", "abort"]  # no task: no Skip
    [sent] = channel.sent  # the human is told once
    assert sent.request_id == request_id
    after = state(ws)
    assert (after["status"], after["open_request"], after["last_exit"]) == (
        "blocked", request_id, EXIT_BLOCKED)  # fmt: skip
    assert after["failures"] == 3 and after["iteration"] == 3


def test_a_passing_done_finishes_with_exit_0(ws: Path) -> None:
    clock = FakeClock()
    done = [Run(exit_code=1), Run(exit_code=0)]
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(), "done": done})
    sup = supervisor(loop_config(ws, done="done", pause=5.0), clock, runner)

    assert sup.run() == EXIT_OK
    assert runner.names() == ["agent", "verify", "done"] * 2
    after = state(ws)
    assert (after["status"], after["last_exit"], after["iteration"]) == ("finished", 0, 2)
    assert not (ws / "BLOCKED.md").exists()


def test_max_iterations_stops_idle(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(loop_config(ws, pause=5.0), clock, runner, max_iterations=3)

    assert sup.run() == EXIT_OK
    assert runner.names() == ["agent", "verify"] * 3
    assert clock.elapsed == 3 * 2 + 2 * 5  # no pause after the last iteration
    assert state(ws)["status"] == "idle"


def test_a_stop_while_the_agent_runs_stops_it_and_the_loop(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(takes=600), "verify": Run()})
    sup = supervisor(loop_config(ws), clock, runner)
    clock.at(30, lambda: sup.request_stop(signal.SIGINT))

    assert sup.run() == EXIT_SIGINT
    assert runner.names() == ["agent"]  # verify never ran
    assert clock.elapsed == 30  # stopped at once: the agent dies on SIGTERM
    after = state(ws)
    assert (after["status"], after["last_exit"]) == ("stopped", EXIT_SIGINT)


def test_a_stop_during_the_pause_ends_it_at_once(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(loop_config(ws, pause=300.0), clock, runner)
    clock.at(100, sup.request_stop)

    assert sup.run() == EXIT_SIGTERM
    assert runner.names() == ["agent", "verify"]
    assert clock.elapsed == 100
    assert state(ws)["status"] == "stopped"


def test_a_stop_while_blocked_ends_the_wait(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(1)})
    sup = supervisor(loop_config(ws, max_verify_failures=1), clock, runner)
    clock.at(7200, sup.request_stop)

    assert sup.run() == EXIT_SIGTERM
    assert clock.elapsed == 7200
    assert (ws / "BLOCKED.md").exists()  # the block stands for the next run
    after = state(ws)
    assert (after["status"], after["open_request"]) == ("stopped", blockfile.request_id_of(
        ws / "BLOCKED.md"))  # fmt: skip


def test_blocked_md_deleted_resumes_with_the_counter_at_zero(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(1, output=FAILED)})
    config = loop_config(ws, escalation={"timeout_minutes": 600})
    sup = supervisor(config, clock, runner, max_iterations=4)
    blocked = ws / "BLOCKED.md"

    def lift() -> None:  # as a human does; the watch's wake-up with it
        blocked.unlink()
        sup.parts.wake.set()

    clock.at(3600, lift)
    assert sup.run() == EXIT_OK
    assert runner.names() == ["agent", "verify"] * 4
    # The fourth iteration starts at once: a deletion is an unblock (SPEC §27).
    assert runner.calls[-2].at == 3600
    [record] = [r for _, r in sup.parts.store.all()]
    assert not isinstance(record, Exception)
    assert record.status == "resolved" and record.resolution is not None
    assert record.resolution.via == "blocked-file-removed"
    assert record.applied_at is not None
    after = state(ws)
    assert after["failures"] == 1 and after["open_request"] is None  # counted afresh
    assert not blocked.exists()


def test_an_answer_reaches_the_next_agent_run_once(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": [Run(1), Run(0), Run(0)]})
    config = loop_config(ws, max_verify_failures=1, escalation={"timeout_minutes": 600})
    sup = supervisor(config, clock, runner, max_iterations=3)
    asked: list[str] = []

    def reply() -> None:  # `loopkit reply` from a terminal, twenty minutes later
        request_id = blockfile.request_id_of(ws / "BLOCKED.md")
        assert request_id is not None
        asked.append(request_id)
        answer(sup.parts.store, request_id, "use Decimal for money", by="ana", via="cli")
        sup.parts.wake.set()

    clock.at(1200, reply)
    assert sup.run() == EXIT_OK
    agents = [c for c in runner.calls if c.name == "agent"]
    assert [c.at for c in agents] == [0, 1200, 1202]  # woken by the answer itself
    assert [c.env.get("LOOPKIT_DECISION") for c in agents] == [
        None, "use Decimal for money", None]  # fmt: skip
    assert agents[1].env["LOOPKIT_DECISION_REQUEST"] == asked[0]
    last = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
    assert (last["parsed_decision"], last["by"]) == ("use Decimal for money", "ana")
    assert not (ws / "BLOCKED.md").exists()
    assert sup.parts.store.load(asked[0]).applied_at is not None


def test_the_loop_runs_after_the_fleet_follower_module_was_imported(ws: Path) -> None:
    """Importing ``loopkit.fleet.follow`` (the follower starting, or the docs check importing
    every module) sets the package's ``follow`` attribute to that module: the supervisor's
    call through it failed with "'module' object is not callable" in any later run."""
    import importlib

    importlib.import_module("loopkit.fleet.follow")
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    assert supervisor(loop_config(ws), clock, runner, max_iterations=1).run() == EXIT_OK
