"""When ``loopkit run`` ends by itself: the done condition, ``--max-iterations``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import AGENT, LOOPKIT, clean_env, lk, loopkit, runs, setup


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


def test_a_loop_whose_last_task_was_skipped_finishes_as_init_wrote_it(ws: Path) -> None:
    """``init --agent … --task-file`` → three failures → *Skip the task* → the loop ends
    (its ``done`` counts the skipped task), never an agent run on no task."""
    (ws / "agent.sh").write_text(AGENT)
    (ws / "PLAN.md").write_text("- [x] set up\n- [ ] round prices to cents\n")
    init = loopkit("-C", str(ws), "init", "--agent", "/bin/sh agent.sh", "--verify", "false",
                   "--task-file", "PLAN.md")  # fmt: skip
    assert init.returncode == 0, init.stderr
    config = (ws / "loopkit.toml").read_text().replace('pause = "5s"', 'pause = "0s"')
    (ws / "loopkit.toml").write_text(config)
    env = clean_env(PATH=f"{LOOPKIT.parent}:{os.environ['PATH']}")
    blocked = loopkit("-C", str(ws), "run", "--exit-on-block", env=env)
    assert blocked.returncode == 2, blocked.stderr
    assert "on task 'round prices to cents'" in blocked.stderr
    assert loopkit("-C", str(ws), "unblock", "--reply", "B").returncode == 0  # Skip the task
    finished = loopkit("-C", str(ws), "run", env=env)
    assert finished.returncode == 0, finished.stderr
    assert [task for _, _, task in runs(ws)] == ["round prices to cents"] * 3
    assert json.loads((ws / ".loopkit" / "state.json").read_text())["status"] == "finished"
    assert "no task left in PLAN.md (1 skipped" in finished.stderr


def test_a_loopkit_started_by_its_path_is_the_one_its_commands_find(ws: Path) -> None:
    """Started as `/path/to/venv/bin/loopkit run` with that folder on no PATH: the `done`
    init writes (`loopkit tasks --done`) and the agent's own `loopkit escalate` find the
    loopkit that runs the loop (its folder is appended to the commands' PATH, last)."""
    (ws / "agent.sh").write_text(
        'loopkit --version > agent-saw.txt\nsed -i "s/- \\[ \\]/- [x]/" PLAN.md\n'
    )
    (ws / "PLAN.md").write_text("- [ ] one\n")
    assert loopkit("-C", str(ws), "init", "--agent", "/bin/sh agent.sh", "--task-file",
                   "PLAN.md").returncode == 0  # fmt: skip
    system = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir())
    assert str(LOOPKIT.parent) not in system.split(os.pathsep)
    done = loopkit("-C", str(ws), "run", env=clean_env(PATH=system))
    assert done.returncode == 0, done.stderr
    assert (ws / "agent-saw.txt").read_text().startswith("loopkit")
    assert json.loads((ws / ".loopkit" / "state.json").read_text())["status"] == "finished"
    assert "done: the done command exited 0" in done.stderr
