"""The corpus goal of SPEC section 19, held by the suite: replayed through the detector, every
stuck trace in ``benchmarks/traces/`` is caught within its threshold by the signals it expects
and by no other, and no progressing trace is flagged. Played into plain folders (the tree's
digest) to stay fast; ``python benchmarks/stuck.py`` replays them in git repositories."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from loopkit.config import StuckConfig
from loopkit.datarecord import replace
from loopkit.supervisor import stuck

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
TRACES = sorted((BENCHMARKS / "traces").glob("*.toml"))


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("stuck_bench", BENCHMARKS / "stuck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["stuck_bench"] = module
    spec.loader.exec_module(module)
    return module


def test_the_corpus_holds_both_kinds() -> None:
    kinds = [path.name.split("-")[0] for path in TRACES]
    assert kinds.count("progress") >= 8 and kinds.count("stuck") >= 12


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_each_trace_is_judged_right(path: Path, tmp_path: Path) -> None:
    module = bench()
    settings = replace(StuckConfig(), max_cost_usd=2.0)
    limits = stuck.thresholds(settings)
    result = module.replay(path, settings, tmp_path, use_git=False)
    assert set(result.fired) == set(result.expect), result.fired
    for signal in result.expect:
        assert module.in_time(result, signal, limits), (signal, result.fired)
