"""``loopkit unskip TASK`` and the skipped tasks in ``loopkit status``, through the installed
command line: the wiring, the output and the exit codes (the behaviour is
tests/supervisor/test_skipped_tasks_inprocess.py)."""

from __future__ import annotations

import json
from pathlib import Path

from loopkit.workspace import Workspace
from loopkit.workspace.skipped import SkippedTasks

from helpers import lk, write_config


def skip(ws: Path, task: str) -> None:
    write_config(ws, '[loop]\ntask_file = "PLAN.md"\n')
    SkippedTasks(Workspace(ws, ws / "BLOCKED.md")).add(
        task, skipped_at="2026-12-02T09:42:00Z", request_id="a1b2c3"
    )


def test_status_lists_the_skipped_tasks(ws: Path) -> None:
    skip(ws, "round prices to cents")
    text = lk(ws, "status")
    assert text.returncode == 0, text.stderr
    assert "skipped:   round prices to cents (since 2026-12-02 09:42 UTC)" in text.stdout
    shown = json.loads(lk(ws, "status", "--json").stdout)
    assert shown["skipped_tasks"] == [{"task": "round prices to cents",
                                       "skipped_at": "2026-12-02T09:42:00Z",
                                       "request_id": "a1b2c3"}]  # fmt: skip


def test_unskip_takes_a_task_back(ws: Path) -> None:
    skip(ws, "round prices to cents")
    done = lk(ws, "unskip", "round prices to cents")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("task 'round prices to cents' is no longer skipped")
    assert "in PLAN.md" in done.stdout
    assert json.loads(lk(ws, "status", "--json").stdout)["skipped_tasks"] == []


def test_unskip_of_an_unknown_task_is_one_line_and_exit_66(ws: Path) -> None:
    skip(ws, "round prices to cents")
    done = lk(ws, "unskip", "round prices")
    assert done.returncode == 66
    [line] = done.stderr.splitlines()
    assert line == (
        "loopkit: error: task 'round prices' is not skipped; did you mean 'round prices to "
        "cents'? (give the task as `loopkit status` lists it)"
    )
    other = lk(ws, "unskip", "deploy")
    assert other.returncode == 66 and "skipped: 'round prices to cents'" in other.stderr
    assert lk(ws, "unskip").returncode == 64  # TASK is required
