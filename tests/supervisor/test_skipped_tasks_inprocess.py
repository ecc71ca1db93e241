"""Skipping a task is visible and can be taken back (SPEC section 16), in process on a fake
runner and clock: ``status`` (and ``--json``) lists the skipped tasks, and ``unskip`` takes
one back — also while a supervisor runs, whose next iteration works on it again.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.clock import iso_seconds
from loopkit.errors import EXIT_OK, TaskNotFound
from loopkit.supervisor.status import render, status
from loopkit.workspace import Workspace
from loopkit.workspace.skipped import SkippedTasks

pytestmark = pytest.mark.usefixtures("no_subprocesses")

PLAN = "- [ ] round prices to cents\n- [ ] show totals\n"


def test_a_skipped_task_is_listed_and_unskip_takes_it_back_while_the_loop_runs(
    ws: Path,
) -> None:
    (ws / "PLAN.md").write_text(PLAN)
    config = loop_config(ws, task_file="PLAN.md", max_verify_failures=1,
                         escalation={"timeout_minutes": 600})  # fmt: skip
    clock = FakeClock()
    seen: dict[str, object] = {}

    def look_and_unskip(call: Call) -> None:  # the human, at a terminal, while the agent runs
        seen["status"] = status(config)
        seen["taken"] = SkippedTasks(Workspace.of(config)).take_back("round prices to cents")

    agent = [Run(), Run(does=look_and_unskip), Run()]
    runner = FakeRunner(clock, {"agent": agent, "verify": [Run(1), Run(0), Run(0)]})
    sup = supervisor(config, clock, runner, max_iterations=3)

    def skip() -> None:
        request_id = sup.parts.state.open_request
        assert request_id is not None
        seen["request"] = request_id
        answer(sup.parts.store, request_id, "B", by="ana", via="cli")  # B) Skip the task
        sup.parts.wake.set()

    clock.at(60, skip)
    assert sup.run() == EXIT_OK
    tasks = [c.env.get("LOOPKIT_TASK") for c in runner.calls if c.name == "agent"]
    assert tasks == ["round prices to cents", "show totals", "round prices to cents"]
    listed = seen["status"]
    assert isinstance(listed, dict)
    [skipped] = listed["skipped_tasks"]
    assert (skipped["task"], skipped["request_id"]) == ("round prices to cents", seen["request"])
    assert skipped["skipped_at"] == iso_seconds(clock.wall + timedelta(seconds=60))
    text = render(listed)
    assert "skipped:   round prices to cents (since " in text
    assert "`loopkit unskip TASK` takes one back" in text
    json.dumps(listed)  # --json prints it as it is
    assert status(config)["skipped_tasks"] == []  # taken back, and not skipped again since


def test_unskip_of_a_task_that_is_not_skipped_names_the_skipped_ones(ws: Path) -> None:
    skipped = SkippedTasks(Workspace.of(loop_config(ws)))
    with pytest.raises(TaskNotFound, match="no task is"):
        skipped.take_back("show totals")
    skipped.add("round prices to cents", skipped_at=None, request_id=None)
    with pytest.raises(TaskNotFound, match=r"did you mean 'round prices to cents'\?"):
        skipped.take_back("round prices to cent")
    with pytest.raises(TaskNotFound, match=r"skipped: 'round prices to cents'"):
        skipped.take_back("deploy")
    assert skipped.tasks() == ["round prices to cents"]


def test_tasks_an_older_supervisor_skipped_stay_skipped(ws: Path) -> None:
    (ws / "PLAN.md").write_text(PLAN)
    (ws / ".loopkit").mkdir()
    old = {"status": "stopped", "skipped_tasks": ["round prices to cents"]}
    (ws / ".loopkit" / "state.json").write_text(json.dumps(old))
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(loop_config(ws, task_file="PLAN.md"), clock, runner, max_iterations=1)

    assert sup.run() == EXIT_OK
    assert [c.env.get("LOOPKIT_TASK") for c in runner.calls] == ["show totals"] * 2
    assert sup.parts.skipped.tasks() == ["round prices to cents"]
    assert "skipped_tasks" not in json.loads((ws / ".loopkit" / "state.json").read_text())


def test_a_broken_skipped_file_never_stops_the_loop(ws: Path) -> None:
    """An agent can write anything in the workspace (SPEC §17): a broken
    ``.loopkit/skipped.json`` is reported, and the loop goes on with the tasks skipped
    before."""
    (ws / "PLAN.md").write_text(PLAN)
    config = loop_config(ws, task_file="PLAN.md")
    clock = FakeClock()

    def break_it(call: Call) -> None:  # the hostile agent
        (ws / ".loopkit" / "skipped.json").write_text("{ not json")

    runner = FakeRunner(clock, {"agent": [Run(does=break_it), Run(), Run()], "verify": Run(0)})
    sup = supervisor(config, clock, runner, max_iterations=3)
    assert sup.run() == EXIT_OK
    tasks = [c.env.get("LOOPKIT_TASK") for c in runner.calls if c.name == "agent"]
    assert len(tasks) == 3


def test_skipping_the_last_open_task_finishes_the_loop(ws: Path) -> None:
    (ws / "PLAN.md").write_text("- [x] set up\n- [ ] round prices to cents\n")
    config = loop_config(ws, task_file="PLAN.md", max_verify_failures=1,
                         escalation={"timeout_minutes": 600})  # fmt: skip
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": [Run()] * 3, "verify": [Run(1)] * 3})
    sup = supervisor(config, clock, runner, max_iterations=3)

    def skip() -> None:
        request_id = sup.parts.state.open_request
        assert request_id is not None
        answer(sup.parts.store, request_id, "B", by="ana", via="cli")  # B) Skip the task
        sup.parts.wake.set()

    clock.at(60, skip)
    assert sup.run() == EXIT_OK
    # One agent run, on the task; none after it was skipped ("the current task" of none).
    tasks = [c.env.get("LOOPKIT_TASK") for c in runner.calls if c.name == "agent"]
    assert tasks == ["round prices to cents"]
    assert (sup.parts.state.status, sup.parts.state.last_exit) == ("finished", EXIT_OK)


@pytest.mark.parametrize("plan", ["- [x] one\n- [x] two\n", "- [ ] one\n", "no tasks at all\n"])
def test_a_task_file_with_no_task_left_finishes_before_any_agent_run(ws: Path, plan: str) -> None:
    (ws / "PLAN.md").write_text(plan)
    config = loop_config(ws, task_file="PLAN.md")
    SkippedTasks(Workspace.of(config)).add("one", skipped_at=None, request_id=None)
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": [Run()], "verify": [Run()]})
    assert supervisor(config, clock, runner, max_iterations=2).run() == EXIT_OK
    assert runner.calls == []


def test_a_task_file_not_there_yet_is_not_finished(ws: Path) -> None:
    config = loop_config(ws, task_file="PLAN.md")
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": [Run()], "verify": [Run()]})
    assert supervisor(config, clock, runner, max_iterations=1).run() == EXIT_OK
    assert [c.name for c in runner.calls] == ["agent", "verify"]


@pytest.mark.parametrize(
    ("says", "runs"), [(0, ["done"]), (1, ["done", "agent", "verify", "done"])]
)
def test_with_no_task_left_the_done_decides_before_an_agent_runs(
    ws: Path, says: int, runs: list[str]
) -> None:
    """init's done (`loopkit tasks --done`) says yes: the loop ends with no agent run. One of
    the user's own that says no lets the loop go on (SPEC §25 watches it for progress)."""
    (ws / "PLAN.md").write_text("- [x] one\n- [ ] two\n")
    config = loop_config(ws, task_file="PLAN.md", done="done")
    SkippedTasks(Workspace.of(config)).add("two", skipped_at=None, request_id=None)
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": [Run()], "verify": [Run()], "done": Run(says)})
    supervisor(config, clock, runner, max_iterations=1).run()
    assert [c.name for c in runner.calls] == runs
