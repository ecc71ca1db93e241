"""One iteration (``Iteration.run``) in process, on a fake runner and a fake clock:
``required_env`` → ``preflight`` → agent → verify → ``done``, and what each ending means.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import Call, FakeClock, FakeRunner, RecordingChannel, Run, loop_config, supervisor

from loopkit.errors import EXIT_OK, EXIT_SIGTERM
from loopkit.escalation import blockfile
from loopkit.supervisor.loop import Supervisor
from loopkit.supervisor.parts import CONTINUE

pytestmark = pytest.mark.usefixtures("no_subprocesses")

HAND_WRITTEN = """\
# Blocked

## Question:
Which currency do prices use?

## Context:
prices.py mixes EUR and USD

## Choices:
- A) EUR — as the shop
- B) USD — as the supplier
"""


def saved(ws: Path) -> dict[str, object]:
    data = json.loads((ws / ".loopkit" / "state.json").read_text())
    assert isinstance(data, dict)
    return data


def the_request(sup: Supervisor, ws: Path) -> str:
    request_id = blockfile.request_id_of(ws / "BLOCKED.md")
    assert request_id is not None and sup.parts.state.open_request == request_id
    return request_id


def test_a_failing_agent_is_not_a_failure_verify_decides(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(exit_code=1), "verify": Run()})
    sup = supervisor(loop_config(ws), clock, runner)
    assert sup.iteration.run() == CONTINUE
    assert runner.names() == ["agent", "verify"]
    assert sup.parts.state.failures == 0


def test_an_agent_past_its_timeout_is_killed_and_counted(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(takes=7200), "verify": Run()})
    sup = supervisor(loop_config(ws, iteration_timeout=600.0), clock, runner)

    assert sup.iteration.run() == CONTINUE
    assert runner.names() == ["agent"]  # verify skipped: the agent did not finish
    assert clock.elapsed == 600
    assert sup.parts.state.failures == 1
    [failed] = sup.parts.state.failed_iterations
    assert failed["reason"] == "agent killed after 600 s (iteration_timeout)"
    assert saved(ws)["failures"] == 1  # saved at once


def test_an_agent_ignoring_sigterm_is_killed_after_the_grace(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(takes=7200, ignores_term=True), "verify": Run()},
                        kill_grace=10.0)  # fmt: skip
    sup = supervisor(loop_config(ws, iteration_timeout=600.0), clock, runner)
    sup.iteration.run()
    assert clock.elapsed == 610
    assert sup.parts.state.failures == 1


@pytest.mark.parametrize("agent", [Run(missing=True), Run(exit_code=127)])
def test_an_agent_that_cannot_run_counts_as_a_failure(ws: Path, agent: Run) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": agent, "verify": Run()})
    sup = supervisor(loop_config(ws), clock, runner)
    sup.iteration.run()
    assert runner.names() == ["agent"]
    assert sup.parts.state.failures == 1


def test_verify_failing_counts_and_passing_resets_the_counter(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": [Run(1), Run(1), Run(0), Run(1)]})
    sup = supervisor(loop_config(ws), clock, runner)
    counts = []
    for _ in range(4):
        assert sup.iteration.run() == CONTINUE
        counts.append(sup.parts.state.failures)
    assert counts == [1, 2, 0, 1]
    assert [f["iteration"] for f in sup.parts.state.failed_iterations] == [4]
    assert saved(ws)["failures"] == 1
    assert not (ws / "BLOCKED.md").exists()


def test_the_last_allowed_failure_raises_the_block(ws: Path) -> None:
    clock = FakeClock()
    (ws / "PLAN.md").write_text("- [x] menu\n- [ ] prices in cents\n")
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(2, output="E   assert 1 == 2\n")})
    channel = RecordingChannel()
    config = loop_config(ws, task_file="PLAN.md", max_verify_failures=2, ladder=("slack",))
    sup = supervisor(config, clock, runner, channel=channel)

    sup.iteration.run()
    assert not (ws / "BLOCKED.md").exists()
    sup.iteration.run()
    request_id = the_request(sup, ws)
    record = sup.parts.store.load(request_id)
    assert (record.trigger, record.task, record.iteration) == ("verify-failures",
                                                               "prices in cents", 2)  # fmt: skip
    assert [o.value for o in record.options] == ["retry", "skip", "abort"]
    assert record.attempted == ["iteration 1: verify exit 2 — E assert 1 == 2",
                                "iteration 2: verify exit 2 — E assert 1 == 2"]  # fmt: skip
    assert [n.request_id for n in channel.sent] == [request_id]
    assert saved(ws)["status"] == "blocked" and saved(ws)["open_request"] == request_id


def test_an_agent_writing_blocked_md_skips_verify_and_is_adopted(ws: Path) -> None:
    clock = FakeClock()

    def write(call: Call) -> None:
        (Path(call.cwd) / "BLOCKED.md").write_text(HAND_WRITTEN)

    runner = FakeRunner(clock, {"agent": Run(exit_code=2, does=write), "verify": Run()})
    channel = RecordingChannel()
    sup = supervisor(loop_config(ws, ladder=("slack",)), clock, runner, channel=channel)

    assert sup.iteration.run() == CONTINUE
    assert runner.names() == ["agent"]  # no verify: the agent asked
    assert (ws / "BLOCKED.md").read_text() == HAND_WRITTEN  # left exactly as written
    [(_, record)] = list(sup.parts.store.all())
    assert not isinstance(record, Exception)
    assert (record.trigger, record.block) == ("agent-file", "adopted")
    assert record.prompt == "Which currency do prices use?"
    assert [o.label for o in record.options] == ["EUR", "USD"]
    assert sup.parts.state.open_request == record.request_id
    assert sup.parts.state.status == "blocked" and sup.parts.state.failures == 0
    assert [n.request_id for n in channel.sent] == [record.request_id]


def test_with_stop_agent_on_block_the_agent_is_stopped_after_the_grace(ws: Path) -> None:
    clock = FakeClock()

    def write(call: Call) -> None:
        (Path(call.cwd) / "BLOCKED.md").write_text(HAND_WRITTEN)

    runner = FakeRunner(clock, {"agent": Run(takes=3600, does=write), "verify": Run()})
    config = loop_config(ws, stop_agent_on_block=True, block_grace=30.0)
    sup = supervisor(config, clock, runner)
    assert sup.iteration.run() == CONTINUE
    assert clock.elapsed == 30
    assert runner.names() == ["agent"] and sup.parts.state.status == "blocked"


def test_a_decision_is_handed_to_one_agent_run_only(ws: Path) -> None:
    clock = FakeClock()
    seen: list[object] = []

    def look(call: Call) -> None:  # what a crash now would leave: the decision consumed
        seen.append(saved(Path(call.cwd))["pending_decisions"])

    runner = FakeRunner(clock, {"agent": Run(does=look), "verify": Run()})
    sup = supervisor(loop_config(ws), clock, runner)
    sup.parts.state.pending_decisions = [{"parsed_decision": "flow-b", "request_id": "r1",
                                          "note": "the v2 API"}]  # fmt: skip
    sup.iteration.run()
    sup.iteration.run()
    first, second = (c.env for c in runner.calls if c.name == "agent")
    assert (first["LOOPKIT_DECISION"], first["LOOPKIT_DECISION_REQUEST"],
            first["LOOPKIT_DECISION_NOTE"]) == ("flow-b", "r1", "the v2 API")  # fmt: skip
    assert not any(k.startswith("LOOPKIT_DECISION") for k in second)
    assert seen == [[], []]
    assert first["LOOPKIT_ITERATION"] == "1" and second["LOOPKIT_ITERATION"] == "2"
    assert first["LOOPKIT_WORKSPACE"] == str(ws.resolve())


def test_a_missing_required_variable_blocks_before_anything_runs(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SHOP_API_KEY", raising=False)
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(loop_config(ws, required_env=("SHOP_API_KEY",)), clock, runner)
    assert sup.iteration.run() == CONTINUE
    assert runner.calls == []
    record = sup.parts.store.load(the_request(sup, ws))
    assert record.trigger == "missing-credential" and "SHOP_API_KEY" in record.prompt


def test_a_preflight_failing_three_times_backs_off_then_blocks(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"db-up": Run(1, takes=0.5, output="connection refused\n"),
                                "agent": Run(), "verify": Run()})  # fmt: skip
    config = loop_config(ws, preflight=("db-up",), preflight_backoff=5.0)
    sup = supervisor(config, clock, runner)
    assert sup.iteration.run() == CONTINUE
    assert runner.names() == ["db-up"] * 3  # the agent never ran
    assert [c.at for c in runner.calls] == [0, 5.5, 16]  # waited 5 s, then 10 s
    record = sup.parts.store.load(the_request(sup, ws))
    assert record.trigger == "dependency-down"
    assert record.attempted == ["try 1: exit 1; waited 5 s", "try 2: exit 1; waited 10 s",
                                "try 3: exit 1"]  # fmt: skip


def test_a_passing_done_finishes(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(), "done": Run()})
    sup = supervisor(loop_config(ws, done="done"), clock, runner)
    step = sup.iteration.run()
    assert (step.action, step.code) == ("exit", EXIT_OK)
    assert saved(ws)["status"] == "finished"


def test_with_no_task_left_done_runs_once_per_iteration(ws: Path) -> None:
    """No task left and a `done` of the user's that says no: asked at the iteration's head
    only when nothing ran since it last said no — never twice in a row (SPEC §25's traces
    go on, each iteration one agent run and one `done`)."""
    (ws / "TASKS.md").write_text("- [x] one\n- [x] two\n")

    def agent(call: Call) -> Run:
        n = call.env["LOOPKIT_ITERATION"]
        return Run(does=lambda c: (Path(c.cwd) / f"step{n}.py").write_text(f"x = {n}\n"))

    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": agent, "verify": Run(), "done": Run(1)})
    config = loop_config(ws, done="done", task_file="TASKS.md")
    sup = supervisor(config, clock, runner, max_iterations=3)
    sup.run()
    names = runner.names()
    assert names.count("agent") == 3, names
    assert names == ["done", "agent", "verify", "done", "agent", "verify", "done", "agent",
                     "verify", "done"], names  # fmt: skip


def test_a_stop_during_verify_stops_the_iteration(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run(takes=120)})
    sup = supervisor(loop_config(ws), clock, runner)
    clock.at(61, sup.request_stop)
    step = sup.iteration.run()
    assert (step.action, step.code) == ("exit", EXIT_SIGTERM)
    assert clock.elapsed == 61
    assert sup.parts.state.failures == 0  # a stopped verify is not a failure


def _api_failure(status: int) -> str:
    """The result Claude Code 2.1 prints when its turn ended on an API failure (no
    StopFailure hook in this workspace: the result alone says it)."""
    return json.dumps({"type": "result", "subtype": "success", "is_error": True,
                       "api_error_status": status, "num_turns": 1, "session_id": "s1",
                       "result": "API Error: …", "permission_denials": []}) + "\n"  # fmt: skip


@pytest.mark.parametrize("status", [429, 500, 503, 529])
def test_an_outage_in_the_agents_result_waits_and_is_no_failure(ws: Path, status: int) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(1, output=_api_failure(status)), "verify": Run(1)})
    sup = supervisor(loop_config(ws, preflight_backoff=2.0), clock, runner)
    assert sup.iteration.run() == CONTINUE
    assert runner.names() == ["agent"]  # no verify: nothing was tried
    assert sup.parts.state.failures == 0 and sup.parts.state.stuck.get("crash_loop", 0) == 0
    down = sup.parts.state.dependency_down
    assert down is not None and f"HTTP {status}" in down["error"] and down["next_try_in"] == 2.0
    assert clock.elapsed == 1.0 + 2.0  # the agent's second, then the wait before the next try
    assert not (ws / "BLOCKED.md").exists()


@pytest.mark.parametrize("status", [401, 402, 403])
def test_a_refused_credential_in_the_agents_result_is_asked_at_once(ws: Path, status: int) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(1, output=_api_failure(status)), "verify": Run()})
    sup = supervisor(loop_config(ws), clock, runner)
    assert sup.iteration.run() == CONTINUE
    assert runner.names() == ["agent"]
    record = sup.parts.store.load(the_request(sup, ws))
    assert f"HTTP {status}" in record.prompt + record.situation
    assert clock.elapsed == 1.0  # the agent's second: asked at once, no wait
