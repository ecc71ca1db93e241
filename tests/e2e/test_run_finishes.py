"""When ``loopkit run`` ends by itself: the done condition, ``--max-iterations``."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import AGENT, lk, loopkit, runs, setup


def test_done_condition_finishes(ws: Path) -> None:
    agent = AGENT + '[ "$LOOPKIT_ITERATION" = 2 ] && touch DONE\n'
    setup(ws, 'done = "test -f DONE"', agent=agent, verify="exit 0\n")
    done = loopkit("-C", str(ws), "run")
    assert done.returncode == 0, done.stderr
    assert len(runs(ws)) == 2
    assert json.loads((ws / ".loopkit" / "state.json").read_text())["status"] == "finished"


def test_max_iterations(ws: Path) -> None:
    setup(ws, verify="exit 0\n")
    assert loopkit("-C", str(ws), "run", "--max-iterations", "2").returncode == 0
    assert [r[0] for r in runs(ws)] == ["1", "2"]


def test_max_iterations_does_not_pause_after_the_last(ws: Path) -> None:
    setup(ws, 'pause = "1h"', verify="exit 0\n")
    done = lk(ws, "run", "--max-iterations", "1")  # the helper's 60 s timeout would trip
    assert done.returncode == 0 and len(runs(ws)) == 1
