"""A runaway inside one turn under the supervisor (SPEC §24), in process: the turn is stopped
with Claude's own interrupt, verify does not run, the question carries the evidence, and the
answer resumes the same session with the human's words — where ``[loop] resume`` is set;
without it, a fresh run gets the decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.config import StuckConfig
from loopkit.errors import EXIT_OK
from loopkit.escalation import blockfile
from loopkit.supervisor.resume import plan
from loopkit.supervisor.stuck_counters import in_turn

pytestmark = pytest.mark.usefixtures("no_subprocesses")

FLAGS = "--input-format stream-json --output-format stream-json --verbose"
AGENT = f"claude -p {FLAGS}"
RESUME = f"claude -p --resume {{session_id}} {FLAGS}"
SESSION = "5a0c2d57-2f43-4f8e-9d43-0e0b6c1f1a2b"


def events(*more: dict[str, Any]) -> str:
    init = {"type": "system", "subtype": "init", "session_id": SESSION}
    return "".join(json.dumps(e) + "\n" for e in (init, *more))


def same_call(n: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for k in range(n):
        found += [
            {"type": "assistant", "message": {"id": f"m{k}", "content": [
                {"type": "tool_use", "id": f"t{k}", "name": "Bash",
                 "input": {"command": "cat config/settings.yml", "description": f"try {k}"}}]}},
            {"type": "user", "message": {"content": [{"type": "tool_result",
             "tool_use_id": f"t{k}", "content": "cat: config/settings.yml: No such file",
             "is_error": True}]}},
        ]  # fmt: skip
    return found


STOPPED = {"type": "result", "subtype": "error_during_execution", "is_error": True,
           "num_turns": 5, "session_id": SESSION, "total_cost_usd": 0.02}  # fmt: skip
DONE = {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
        "session_id": SESSION, "total_cost_usd": 0.01}  # fmt: skip


def test_a_runaway_is_asked_about_and_the_answer_resumes_its_session(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {
        AGENT: Run(output=events(*same_call(6), STOPPED), exit_code=1),
        RESUME.replace("{session_id}", SESSION): Run(output=events(DONE)),
        "verify": Run(),
    })  # fmt: skip
    config = loop_config(ws, stuck=StuckConfig(0, 0, 0, 0), agent=AGENT, resume=RESUME,
                         prompt="tick the task")  # fmt: skip
    sup = supervisor(config, clock, runner, max_iterations=2)

    def reply() -> None:
        request_id = blockfile.request_id_of(ws / "BLOCKED.md")
        assert request_id is not None
        record = sup.parts.store.load(request_id)
        assert record.trigger == "stuck-same-call" and record.raised_by == "supervisor"
        assert "same call 5 times in a row" in record.prompt
        assert "> Bash: cat config/settings.yml" in record.situation
        assert "Each time: ✗ cat: config/settings.yml: No such file" in record.situation
        assert f"Stopped with Claude Code's own interrupt; the session {SESSION} is kept" in (
            record.situation)  # fmt: skip
        answer(
            sup.parts.store,
            request_id,
            "A, the settings file is gone for good; tick the task",
            by="ana",
            via="cli",
        )
        sup.parts.wake.set()

    clock.after(60, reply)
    assert sup.run() == EXIT_OK
    assert runner.names() == [AGENT, RESUME.replace("{session_id}", SESSION), "verify"]
    first, resumed = (
        [json.loads(line) for line in bytes(one.written).splitlines()] for one in runner.inputs
    )
    assert first[-1]["request"] == {"subtype": "interrupt"}  # the turn stopped its own way
    said = resumed[0]["message"]["content"]
    assert said.startswith("loopkit stopped your last turn: Stuck (same_call)")
    assert said.endswith("The human answered by ana: the settings file is gone for good; "
                         "tick the task")  # fmt: skip
    assert sup.parts.state.resume == {"session_id": SESSION, "iteration": 2, "resumed": True,
                                      "reason": None}  # fmt: skip


def test_only_a_turn_stopped_inside_resumes_among_the_supervisors_own_questions() -> None:
    assert in_turn("stuck-same-call") and in_turn("stuck-ping-pong") and in_turn("stuck-silent")
    assert not in_turn("stuck-no-progress") and not in_turn("verify-failures")
    assert not in_turn(None)


def test_without_a_resume_line_the_answer_goes_to_a_fresh_run(ws: Path) -> None:
    assert plan(None, [{"request_id": "x"}], None, SESSION, ws) is None  # type: ignore[arg-type]


def test_the_stop_is_not_a_failure_and_verify_does_not_run(ws: Path) -> None:
    clock = FakeClock()
    calls: list[Call] = []
    runner = FakeRunner(clock, {
        AGENT: Run(output=events(*same_call(5), STOPPED), exit_code=1),
        "verify": lambda call: calls.append(call) or Run(),
    })  # fmt: skip
    config = loop_config(ws, stuck=StuckConfig(0, 0, 0, 0), agent=AGENT, prompt="go")
    sup = supervisor(config, clock, runner, exit_on_block=True, max_iterations=3)
    assert sup.run() == 2
    assert not calls and sup.parts.state.failures == 0
    record = sup.parts.store.load(sup.parts.state.open_request or "")
    assert "with no [loop] resume your answer goes to a fresh run" in record.situation
