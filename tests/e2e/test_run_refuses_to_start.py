"""``loopkit run`` refuses to start beside another supervisor or with a channel that reaches
nobody; ``status`` names the one running."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from helpers import Daemon, clean_env, lk, loopkit, records, runs, setup


def test_a_second_supervisor_names_the_first(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        other = loopkit("-C", str(ws), "run")
        assert other.returncode == 1
        assert f"pid {daemon.proc.pid}" in other.stderr
        status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
        assert status["state"] == "blocked" and status["pid"] == daemon.proc.pid
        assert status["open_request"]["request_id"] == records(ws)[0]["request_id"]
        os.kill(daemon.proc.pid, signal.SIGTERM)
        daemon.wait()
    status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
    # SPEC §9: while BLOCKED.md stands the loop is blocked, whoever (if anyone) waits on it.
    assert status["state"] == "blocked" and status["supervisor"] == "stopped"
    assert status["pid"] is None


def test_unknown_channel_refuses_to_start(ws: Path) -> None:
    setup(ws)
    done = loopkit("-C", str(ws), "run", env=clean_env(LOOPKIT_HITL_CHANNEL="pigeon"))
    assert done.returncode == 78 and "unknown channel 'pigeon'" in done.stderr


def test_run_refuses_a_channel_that_cannot_reach_anyone(ws: Path) -> None:
    setup(ws)
    for channel, variable in (("telegram", "TOKEN"), ("slack", "WEBHOOK"), ("dial", "DIAL_CMD")):
        done = lk(ws, "run", env=clean_env(LOOPKIT_HITL_CHANNEL=channel))
        assert done.returncode == 78, done.stderr
        assert variable in done.stderr and "Traceback" not in done.stderr
    assert not runs(ws)  # refused before the first iteration


def test_a_typo_in_the_agent_exits_78_before_iteration_1(ws: Path) -> None:
    setup(ws, extra="agent = \"claud-typo-x -p 'Read PROMPT.md'\"")
    done = lk(ws, "run")
    assert done.returncode == 78, done.stderr
    [line] = done.stderr.splitlines()  # one line: what, where, how to fix
    assert "[loop] agent: 'claud-typo-x' is not found on PATH" in line
    assert f"install it, or fix the command in {ws / 'loopkit.toml'}" in line
    assert not runs(ws) and not (ws / "requests").exists()  # nothing ran, nobody was asked
    assert not (ws / ".loopkit" / "state.json").exists()


def test_each_missing_command_is_named(ws: Path) -> None:
    setup(ws, extra='verify = "cd . && ./verify-typo.sh"')
    done = lk(ws, "run")
    assert done.returncode == 78
    assert "[loop] verify: './verify-typo.sh' is not found (no such file in" in done.stderr
    setup(ws, extra='done = ["no-such-done-x"]\npreflight = ["true", "no-such-probe-x --ping"]')
    done = lk(ws, "run")
    assert done.returncode == 78 and "[loop] done: 'no-such-done-x'" in done.stderr
    assert "(and 1 more: `loopkit doctor` lists them)" in done.stderr
    assert not runs(ws)


def test_shell_syntax_starts_the_loop(ws: Path) -> None:
    setup(
        ws,
        extra='agent = "! false && if true; then sh agent.sh; fi"\n'
        "verify = \"( cd . && exit 0 )\"\ndone = 'VAR=x exec true'",
    )
    done = lk(ws, "run", "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    assert [run[0] for run in runs(ws)] == ["1"]


def test_a_pause_of_centuries_is_a_config_error_not_a_crash(ws: Path) -> None:
    """SPEC §28: ``pause = 1e10`` crashed the loop after its first iteration (exit 1)."""
    setup(ws, "pause = 1e10")
    done = loopkit("-C", str(ws), "run", "--max-iterations", "2")
    assert done.returncode == 78, done.stderr
    assert "over a year" in done.stderr and "Traceback" not in done.stderr
    assert runs(ws) == []


def test_a_task_pattern_that_backtracks_without_end_is_a_config_error_in_bounded_time(
    ws: Path,
) -> None:
    """SPEC §28: a catastrophic ``task_pattern`` on a line of the task file hung ``run``
    between two iterations for good; it is given a few seconds, then named (78)."""
    (ws / "TASKS.md").write_text("- [ ] " + "a" * 64 + "!\n")
    setup(ws, 'task_file = "TASKS.md"\ntask_pattern = "^- \\\\[ \\\\] (a|aa)+$"')
    started = time.monotonic()
    done = loopkit("-C", str(ws), "run", "--max-iterations", "1", timeout=60)
    assert done.returncode == 78, done.stderr
    assert "task_pattern" in done.stderr and "backtracks" in done.stderr
    assert time.monotonic() - started < 30
    assert runs(ws) == []  # never ran the agent on a task it could not name
