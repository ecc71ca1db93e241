"""The corpus traces that need git — commits on another branch, a reset and the same tree
committed again, a new branch a turn with the same change — through the installed
``loopkit run`` itself in real git repositories, as ``python benchmarks/stuck.py`` runs every
trace: the healthy one is never asked about, each stuck one within its threshold + 1."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from loopkit.config import StuckConfig
from loopkit.datarecord import replace
from loopkit.supervisor import stuck_counters

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ROOT = BENCHMARKS.parent


def bench() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("stuck_bench", BENCHMARKS / "stuck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stuck_bench"] = module
    spec.loader.exec_module(module)
    return module


BENCH = bench()
GIT_TRACES = [t for t in BENCH.stuck_traces.traces(BENCHMARKS / "sessions") if t.needs_git]
LIMITS = stuck_counters.thresholds(replace(StuckConfig(), max_cost_usd=2.0))


def test_there_are_git_traces_of_both_kinds() -> None:
    assert {t.kind for t in GIT_TRACES} == {"progressing", "stuck"}


@pytest.mark.parametrize("trace", GIT_TRACES, ids=[t.name for t in GIT_TRACES])
def test_a_git_trace_through_loopkit_run(trace: object, tmp_path: Path) -> None:
    result = BENCH.run_trace(trace, ROOT, tmp_path, 2.0)
    if trace.kind == "progressing":  # type: ignore[attr-defined]
        assert result.blocks == []
    else:
        assert BENCH.stuck_traces.caught(result, LIMITS), result.blocks
