"""The corpus goal of SPEC §19 and §25, held by the suite: every trace of both corpora
(``benchmarks/traces/``, the project's own; ``benchmarks/sessions/``, shaped like real agent
sessions) played through the real supervisor — its iteration, stuck watch, verify counting,
escalator, BLOCKED.md — with the default configuration: no progressing trace is asked about,
and every stuck trace is asked about within its threshold + 1, with the label it names.

In process: the agent, verify and ``done`` are the trace's steps on the fake runner (the
trace's diffs written into a plain folder), and each block is answered ``A`` and the loop
started again, as ``python benchmarks/stuck.py`` does with ``loopkit run`` itself in git
repositories. A trace that needs git (commits on branches) is played there only, and in
``tests/e2e/test_stuck_corpus_run.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, escalator

from loopkit import config as config_mod
from loopkit.answering import answer
from loopkit.config import StuckConfig
from loopkit.datarecord import replace
from loopkit.errors import EXIT_BLOCKED, EXIT_OK
from loopkit.supervisor import stuck_counters
from loopkit.supervisor.loop import Options, Supervisor
from loopkit.workspace import Workspace
from loopkit.workspace.state import StateFile

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
MAX_COST = 2.0


def load_traces() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stuck_traces", BENCHMARKS / "stuck_traces.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stuck_traces"] = module
    spec.loader.exec_module(module)
    return module


TRACES = load_traces()
ALL = [t for folder in ("traces", "sessions") for t in TRACES.traces(BENCHMARKS / folder)]
PLAIN = [t for t in ALL if not t.needs_git]
LIMITS = stuck_counters.thresholds(replace(StuckConfig(), max_cost_usd=MAX_COST))


def test_the_corpora_hold_both_kinds_of_every_shape() -> None:
    sessions = [t for t in ALL if t.path.parent.name == "sessions"]
    assert sum(t.kind == "stuck" for t in sessions) >= 24
    assert sum(t.kind == "progressing" for t in sessions) >= 17
    assert {s for t in ALL for s in t.expect} >= set(TRACES.SIGNALS)


def play(trace: object, ws: Path) -> object:
    """``trace`` through the supervisor on the fake runner, each block answered ``A``."""
    TRACES.set_up(trace, ws, use_git=False)
    (ws / "loopkit.toml").write_text(TRACES.config(TRACES.with_budget(trace, MAX_COST), ["trace"]))
    steps = trace.steps  # type: ignore[attr-defined]

    def agent(call: Call) -> Run:
        step = TRACES.step_for(trace, int(call.env["LOOPKIT_ITERATION"]))
        hangs = step.get("agent_ending") == "timeout"

        def does(call: Call) -> None:
            TRACES.apply(trace, step, Path(call.cwd), use_git=False)

        return Run(int(step.get("agent_exit") or 0), output=TRACES.agent_output(step),
                   takes=TRACES.HANG if hangs else 1.0, does=does)  # fmt: skip

    def verify(call: Call) -> Run:
        step = TRACES.step_for(trace, int(call.env["LOOPKIT_ITERATION"]))
        return Run(int(step.get("verify_exit") or 0), output=str(step.get("verify_output", "")))

    result = TRACES.Result(trace)
    clock = FakeClock()
    runner = FakeRunner(clock, {"trace agent": agent, "trace verify": verify,
                                "trace done": Run(1)})  # fmt: skip
    for _ in range(len(steps) + 1):
        config = config_mod.load(ws)
        done = StateFile(Workspace.of(config)).load().iteration
        if done >= len(steps):
            break
        sup = Supervisor(config, options=Options(install_signals=False, exit_on_block=True,
                                                 max_iterations=len(steps) - done),
                         runner=runner, escalator=escalator(), clock=clock)  # fmt: skip
        code = sup.run()
        if code == EXIT_OK:
            break
        assert code == EXIT_BLOCKED, code
        state = sup.parts.state
        record = sup.parts.store.load(state.open_request or "")
        signals = TRACES.signals_of(record.trigger, list(state.stuck.get("pending", [])))
        result.blocks.append((record.iteration or 0, signals, TRACES.LABELS.get(record.trigger)))
        answer(sup.parts.store, record.request_id, "A", by="bench", via="cli")
    return result


@pytest.mark.parametrize("trace", PLAIN, ids=[f"{t.path.parent.name}/{t.name}" for t in PLAIN])
def test_each_trace_is_judged_right(trace: object, tmp_path: Path) -> None:
    result = play(trace, tmp_path / "ws")
    if trace.kind == "progressing":  # type: ignore[attr-defined]
        assert result.blocks == [], result.blocks  # type: ignore[attr-defined]
        return
    assert TRACES.caught(result, LIMITS), result.blocks  # type: ignore[attr-defined]
    label = trace.data.get("label")  # type: ignore[attr-defined]
    if label:
        assert result.first_label == label, result.blocks  # type: ignore[attr-defined]
