"""The stuck triggers in the loop (SPEC section 19), in process on a fake runner and clock:
each fires at its threshold with its evidence as the supervisor's own block; a progressing
loop never fires; an answer resets that trigger's counter; ``0`` turns one off.

Real parts besides: the workspace on disk (the agent's scripted runs write into it; outside
git, so its digest is the tree's), the request store, the escalator, BLOCKED.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.config import StuckConfig
from loopkit.errors import EXIT_BLOCKED, EXIT_OK
from loopkit.escalation import blockfile
from loopkit.requests.record import Request
from loopkit.supervisor.loop import Supervisor

pytestmark = pytest.mark.usefixtures("no_subprocesses")

DEFAULTS = StuckConfig()
SORRY = (
    "I apologize for the oversight. Looking at the failing test again, the problem is that "
    "`Cart.total()` returns dollars as a float while the test expects integer cents. I have "
    "updated `shop/cart.py` to return cents. Let me run the tests again to verify the fix."
)
IMPORT_ERROR = """\
==================================== ERRORS ====================================
___________________ ERROR collecting tests/test_{name}.py ___________________
ImportError while importing test module '/tmp/pytest-of-ci/pytest-{n}/shop/tests/test_{name}.py'.
E   ModuleNotFoundError: No module named 'shop'
=========================== short test summary info ============================
ERROR tests/test_{name}.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.{n}s ===============================
"""


def iteration_of(call: Call) -> int:
    return int(call.env["LOOPKIT_ITERATION"])


def writes(call: Call) -> None:
    """An agent that makes progress: a new file each run."""
    n = iteration_of(call)
    (Path(call.cwd) / f"step{n}.py").write_text(f"def step{n}() -> int:\n    return {n}\n")


def rewrites(call: Call) -> None:
    """An agent that rewrites the same lines each run, differently: no new ground."""
    n = iteration_of(call)
    (Path(call.cwd) / "cart.py").write_text(f"def total(cart):\n    return round(sum(cart), {n})\n")


def progressing(call: Call) -> Run:
    n = iteration_of(call)
    return Run(output=f"Implemented step {n} in step{n}.py: returns {n}; tests added.\n",
               does=writes)  # fmt: skip


def the_block(sup: Supervisor, ws: Path) -> Request:
    request_id = blockfile.request_id_of(ws / "BLOCKED.md")
    assert request_id is not None
    return sup.parts.store.load(request_id)


def run_until_blocked(ws: Path, agent: Any, verify: Any = None, **settings: Any) -> tuple[
        Supervisor, FakeRunner, Request]:  # fmt: skip
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": agent, "verify": verify or Run()})
    loop = {k: settings.pop(k) for k in ("task_file",) if k in settings}
    config = loop_config(ws, stuck=StuckConfig(**settings), **loop)
    sup = supervisor(config, clock, runner, exit_on_block=True, max_iterations=20)
    assert sup.run() == EXIT_BLOCKED
    return sup, runner, the_block(sup, ws)


def test_no_progress_asks_at_its_threshold_naming_the_iterations(ws: Path) -> None:
    _sup, runner, record = run_until_blocked(ws, Run(output="Everything is already done."))
    assert runner.names().count("agent") == 3
    assert (record.trigger, record.raised_by, record.iteration) == (
        "stuck-no-progress", "supervisor", 3)  # fmt: skip
    assert record.prompt == "Stuck (no_progress): No progress in 3 iterations: how do I go on?"
    assert "Signal: no_progress (3 of 3)" in record.situation
    assert "no commit (not in git)" in record.situation
    assert record.attempted == [f"iteration {n}: no change" for n in (1, 2, 3)]
    assert [o.value for o in record.options] == ["retry", "abort"]  # no task: no Skip
    saved = json.loads((ws / ".loopkit" / "state.json").read_text())
    assert saved["stuck"]["no_progress"] == 3 and saved["stuck"]["pending"] == ["no_progress"]


def test_flipping_a_file_back_and_forth_is_caught(ws: Path) -> None:
    def flip(call: Call) -> None:
        quote = "'" if iteration_of(call) % 2 else '"'
        (Path(call.cwd) / "app.py").write_text(f"NAME = {quote}shop{quote}\n")

    (ws / "app.py").write_text('NAME = "shop"\n')
    _sup, runner, record = run_until_blocked(ws, Run(output="Reformatted app.py.", does=flip))
    assert runner.names().count("agent") == 4  # 1: new; 2, 3, 4: states seen before
    assert record.attempted == [f"iteration {n}: back to an earlier state" for n in (2, 3, 4)]


def test_the_same_error_across_tasks_asks_with_its_first_line(ws: Path) -> None:
    (ws / "PLAN.md").write_text("".join(f"- [ ] task {n}\n" for n in range(1, 6)))

    def tick(call: Call) -> None:  # progress: one task done per run
        plan = Path(call.cwd) / "PLAN.md"
        plan.write_text(plan.read_text().replace("- [ ]", "- [x]", 1))

    def verify(call: Call) -> Run:
        n = iteration_of(call)
        return Run(2, output=IMPORT_ERROR.format(name="cart", n=n))

    sup, _runner, record = run_until_blocked(ws, Run(output="Done.", does=tick), verify,
                                            task_file="PLAN.md")  # fmt: skip
    # The first failure is where it begins; each task ticked over it after counts (SPEC §25).
    assert record.trigger == "stuck-same-error" and record.iteration == 4
    assert "> E ModuleNotFoundError: No module named 'shop'" in record.situation
    assert record.attempted == [
        "iteration 2 on task 'task 2': exit 2",
        "iteration 3 on task 'task 3': exit 2",
        "iteration 4 on task 'task 4': exit 2",
    ]
    assert [o.value for o in record.options] == ["retry", "skip", "abort"]
    assert sup.parts.state.failures == 0  # each tick reached a new line: none counted


def test_repeated_output_asks_after_four_near_copies(ws: Path) -> None:
    def sorry(call: Call) -> Run:
        return Run(output=SORRY.replace("again", f"again (run {iteration_of(call)})"),
                   does=rewrites)  # fmt: skip

    _sup, _runner, record = run_until_blocked(ws, sorry, no_progress=0)
    assert record.trigger == "stuck-repeated-output" and record.iteration == 5
    assert "similarity 0.9" in record.prompt
    assert record.attempted[0].startswith("iteration 2: similarity 0.9")


def test_a_crash_loop_asks_with_the_exit_codes_and_names_no_progress_too(ws: Path) -> None:
    agent = Run(1, output="Error: Invalid API key · Please run /login\n")
    sup, _runner, record = run_until_blocked(ws, agent)
    assert record.trigger == "stuck-crash-loop" and record.iteration == 3
    assert record.prompt.startswith("Stuck (crash_loop): the agent crashed 3× in a row")
    assert "> Error: Invalid API key · Please run /login" in record.situation
    assert "Also: no_progress — No progress in 3 iterations (3 of 3)" in record.situation
    assert record.attempted[:3] == [
        f"iteration {n}: agent exit 1, nothing changed" for n in (1, 2, 3)]  # fmt: skip
    assert sorted(sup.parts.state.stuck["pending"]) == ["crash_loop", "no_progress"]


def test_max_task_iterations_asks_before_running_more(ws: Path) -> None:
    (ws / "PLAN.md").write_text("- [ ] prices in cents\n")
    _sup, runner, record = run_until_blocked(ws, progressing, task_file="PLAN.md",
                                            max_task_iterations=2)  # fmt: skip
    assert runner.names().count("agent") == 2  # the third is not started
    assert record.trigger == "stuck-max-task-iterations"
    assert record.prompt == (
        "Stuck (max_task_iterations): 2 iterations on task 'prices in cents' "
        "(max_task_iterations = 2): go on with it?"
    )


def test_task_timeout_asks_once_the_task_took_too_long(ws: Path) -> None:
    agent = lambda call: Run(takes=1000, does=writes)  # noqa: E731
    _sup, runner, record = run_until_blocked(ws, agent, task_timeout=2500.0)
    assert runner.names().count("agent") == 3  # heads at 0, 1001, 2002; 3003 asks
    assert record.trigger == "stuck-task-timeout"
    assert "50 min on the task (task_timeout = 41 min)" in record.prompt


def test_max_cost_asks_before_spending_more(ws: Path) -> None:
    def claude(call: Call) -> Run:
        result = {"type": "result", "subtype": "success", "is_error": False,
                  "total_cost_usd": 0.4, "result": "Done.", "session_id": "s-1"}  # fmt: skip
        return Run(output="…\n" + json.dumps(result) + "\n", does=writes)

    _sup, runner, record = run_until_blocked(ws, claude, max_cost_usd=1.0)
    assert runner.names().count("agent") == 3
    assert record.trigger == "stuck-max-cost-usd"
    assert record.prompt == (
        "Stuck (max_cost_usd): The agent has spent $1.20 (max_cost_usd = $1.00): spend more?"
    )


def test_a_progressing_loop_never_asks(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": progressing, "verify": Run(output="12 passed\n")})
    sup = supervisor(loop_config(ws, stuck=DEFAULTS), clock, runner, max_iterations=15)
    assert sup.run() == EXIT_OK
    assert not list(sup.parts.store.all())


def test_an_answer_resets_its_trigger_so_the_next_ask_is_a_threshold_later(ws: Path) -> None:
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(output="Nothing left to do."), "verify": Run()})
    config = loop_config(ws, stuck=DEFAULTS, escalation={"timeout_minutes": 600})
    sup = supervisor(config, clock, runner, max_iterations=7)
    asked: list[tuple[str, int]] = []

    def reply() -> None:
        record = the_block(sup, ws)
        asked.append((record.trigger or "", record.iteration or 0))
        answer(sup.parts.store, record.request_id, "A, check PLAN.md", by="ana", via="cli")
        sup.parts.wake.set()

    clock.at(600, reply)
    clock.at(1800, reply)
    assert sup.run() == EXIT_OK
    assert asked == [("stuck-no-progress", 3), ("stuck-no-progress", 6)]
    assert sup.parts.state.stuck["no_progress"] == 1  # iteration 7, counted afresh


@pytest.mark.parametrize("name", ["no_progress", "repeated_output", "crash_loop", "same_error"])
def test_zero_turns_a_trigger_off(ws: Path, name: str) -> None:
    clock = FakeClock()
    stuck = StuckConfig(**{n: 0 for n in ("no_progress", "repeated_output", "crash_loop",
                                          "same_error")})  # fmt: skip
    runner = FakeRunner(clock, {"agent": Run(1, output=SORRY), "verify": Run()})
    sup = supervisor(loop_config(ws, stuck=stuck), clock, runner, max_iterations=8)
    assert sup.run() == EXIT_OK
    assert not list(sup.parts.store.all())


def test_max_cost_counts_the_results_of_an_agent_spoken_with_in_stream_json(ws: Path) -> None:
    """Claude Code in stream-json: its output shown is text, its cost is in the result event
    (the tail alone never carried it: such a loop spent without limit)."""
    agent = "claude -p --input-format stream-json --output-format stream-json"

    def claude(call: Call) -> Run:
        events = [{"type": "system", "subtype": "init", "session_id": "s-1"},
                  {"type": "result", "subtype": "success", "is_error": False, "num_turns": 2,
                   "total_cost_usd": 0.4, "session_id": "s-1"}]  # fmt: skip
        return Run(output="".join(json.dumps(e) + "\n" for e in events), does=writes)

    clock = FakeClock()
    runner = FakeRunner(clock, {agent: claude, "verify": Run()})
    config = loop_config(ws, stuck=StuckConfig(max_cost_usd=1.0), agent=agent, prompt="go on")
    sup = supervisor(config, clock, runner, exit_on_block=True, max_iterations=20)
    assert sup.run() == EXIT_BLOCKED
    record = the_block(sup, ws)
    assert runner.names().count(agent) == 3
    assert record.trigger == "stuck-max-cost-usd"
