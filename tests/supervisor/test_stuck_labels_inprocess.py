"""What the human is asked (SPEC §25), in process: an overload is *dependency down*, a
refused call *denied* with the call, a crash shows its exit and last line, a plain-text 429
is no crash; the question names the failing test and its first error line and keeps its ask
whole; the spend the agent reported is recorded where ``loopkit ps`` reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, loop_config, supervisor

from loopkit import loops
from loopkit.config import StuckConfig
from loopkit.errors import EXIT_BLOCKED, EXIT_OK
from loopkit.escalation import blockfile
from loopkit.home import Registered
from loopkit.message import MAX_QUESTION
from loopkit.requests.record import Request
from loopkit.supervisor.loop import Supervisor

pytestmark = pytest.mark.usefixtures("no_subprocesses")

OVERLOADED = (
    'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n'
)


def blocked(ws: Path, agent: object, verify: object = None, **stuck: object) -> tuple[
        Supervisor, Request]:  # fmt: skip
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": agent, "verify": verify or Run()})  # type: ignore[dict-item]
    config = loop_config(ws, stuck=StuckConfig(**stuck))  # type: ignore[arg-type]
    sup = supervisor(config, clock, runner, exit_on_block=True, max_iterations=12)
    assert sup.run() == EXIT_BLOCKED
    request_id = blockfile.request_id_of(ws / "BLOCKED.md")
    assert request_id is not None
    return sup, sup.parts.store.load(request_id)


def test_an_overload_is_asked_as_dependency_down(ws: Path) -> None:
    sup, record = blocked(ws, Run(1, output="Reading the plan…\n" + OVERLOADED))
    assert record.trigger == "dependency-down"
    assert record.prompt.startswith("Stuck (dependency down): the agent's API failed")
    assert record.prompt.endswith(": keep waiting?")
    assert "overloaded_error" in record.prompt
    assert "No progress" not in record.prompt and "crashed" not in record.prompt
    assert "crash_loop" not in sup.parts.state.stuck["pending"]


def test_a_plain_text_429_is_no_crash(ws: Path) -> None:
    sup, record = blocked(ws, Run(1, output="Error: 429 Too Many Requests; retry later\n"))
    assert record.trigger == "dependency-down"
    assert "crash_loop" not in sup.parts.state.stuck["pending"]
    assert sup.parts.state.stuck["crash_loop"] == 0


def test_a_refused_call_is_asked_as_denied_with_the_call(ws: Path) -> None:
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "I could "
              "not push.", "total_cost_usd": 0.02, "session_id": "s-1", "permission_denials": [
                  {"tool_name": "Bash", "tool_use_id": "toolu_1",
                   "tool_input": {"command": "git push --force origin main"}}]}  # fmt: skip
    _sup, record = blocked(ws, Run(output=json.dumps(result) + "\n"))
    assert record.trigger == "stuck-denied"
    assert record.prompt.startswith("Stuck (denied): ")
    assert "Bash(git push --force origin main)" in record.prompt
    assert record.prompt.endswith(": how do I go on?")


def test_a_crash_shows_its_exit_and_last_line(ws: Path) -> None:
    crash = "Traceback (most recent call last):\n  File \"agent.py\", line 3\nKeyError: 'model'\n"
    _sup, record = blocked(ws, Run(3, output=crash))
    assert record.trigger == "stuck-crash-loop"
    assert "exit 3: KeyError: 'model'" in record.prompt


def test_the_failing_test_and_its_first_error_line_are_asked_never_the_summary(
    ws: Path,
) -> None:
    output = (
        "_____ test_create_order _____\n\n>       assert r.status_code == 201\n"
        "E       assert 404 == 201\n\ntests/test_api.py:18: AssertionError\n"
        "FAILED tests/test_api.py::test_create_order - assert 404 == 201\n"
        "===== 1 failed, 56 passed in 0.84s =====\n"
    )
    _sup, record = blocked(ws, Run(output="Tried again.\n"), Run(1, output=output),
                           no_progress=0)  # fmt: skip
    assert record.trigger == "verify-failures"
    assert "test_api.py::test_create_order: assert 404 == 201" in record.prompt
    assert "passed" not in record.prompt and "passed" not in str(record.summary)


@pytest.mark.parametrize("length", [40, 130, 400])
def test_the_ask_is_never_cut(ws: Path, length: int) -> None:
    (ws / "PLAN.md").write_text(f"- [ ] migrate the {'legacy billing ' * (length // 15)}tables\n")
    output = f"E   ValueError: {'the invoice total does not match the ledger ' * (length // 40)}\n"
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(1, output=output)})
    config = loop_config(ws, stuck=StuckConfig(), task_file="PLAN.md")
    sup = supervisor(config, clock, runner, exit_on_block=True, max_iterations=12)
    assert sup.run() == EXIT_BLOCKED
    request_id = blockfile.request_id_of(ws / "BLOCKED.md")
    assert request_id is not None
    record = sup.parts.store.load(request_id)
    assert len(record.prompt) <= MAX_QUESTION
    assert record.prompt.endswith(": how do I go on?"), record.prompt


def test_the_spend_is_recorded_where_ps_reads_it(ws: Path) -> None:
    def claude(call: Call) -> Run:
        n = int(call.env["LOOPKIT_ITERATION"])
        result = {"type": "result", "subtype": "success", "is_error": False,
                  "total_cost_usd": 0.4, "result": "Done.", "session_id": "s-1"}  # fmt: skip

        def write(call: Call) -> None:
            (Path(call.cwd) / f"step{n}.py").write_text(f"def step{n}():\n    return {n}\n")

        return Run(output=json.dumps(result) + "\n", does=write)

    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": claude, "verify": Run()})
    sup = supervisor(loop_config(ws, stuck=StuckConfig()), clock, runner, max_iterations=3)
    assert sup.run() == EXIT_OK
    row = loops.read_loop(Registered(ws, "shop", ""))
    assert row.spend_usd == pytest.approx(1.2)
    assert "$1.20" in loops.render([row])


@pytest.mark.parametrize("agent", ["codex exec --json go", "gemini -p go -o stream-json"])
def test_a_watched_agents_spend_is_read_from_its_own_events(ws: Path, agent: str) -> None:
    """A Codex or Gemini run whose events are watched (SPEC §24) shows lines for them; its
    usage is still read from the events it printed (SPEC §25: max_cost_usd, ps's spend)."""

    def events(call: Call) -> Run:
        n = int(call.env["LOOPKIT_ITERATION"])
        if agent.startswith("codex"):
            printed = [{"type": "thread.started", "thread_id": "t-1"}, {"type": "turn.started"},
                       {"type": "turn.completed", "usage": {"input_tokens": 100_000,
                        "cached_input_tokens": 0, "output_tokens": 20_000}}]  # fmt: skip
        else:
            stats = {"input_tokens": 100_000, "output_tokens": 20_000, "cached": 0}
            printed = [{"type": "init", "session_id": "g-1", "model": "gemini-2.5-pro"},
                       {"type": "result", "status": "success", "stats": stats}]  # fmt: skip

        def write(call: Call) -> None:
            (Path(call.cwd) / f"step{n}.py").write_text(f"def step{n}():\n    return {n}\n")

        return Run(output="".join(json.dumps(e) + "\n" for e in printed), does=write)

    clock = FakeClock()
    runner = FakeRunner(clock, {agent: events, "verify": Run()})
    config = loop_config(ws, stuck=StuckConfig(), agent=agent)
    sup = supervisor(config, clock, runner, max_iterations=2)
    assert sup.run() == EXIT_OK
    row = loops.read_loop(Registered(ws, "shop", ""))
    assert row.spend_usd is not None and row.spend_usd > 0, row
