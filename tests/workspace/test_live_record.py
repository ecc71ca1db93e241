"""``.loopkit/live.json`` as ``ps``, ``status`` and the Loops page read it (SPEC §24): only the
running turn of the supervisor that runs, never a stale, foreign or oversized file; and the
running call on one line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from loopkit.loops import live_line, said_line
from loopkit.workspace import Workspace, live


def test_only_the_running_turn_of_the_supervisor_that_runs_is_read(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, tmp_path / "BLOCKED.md")
    (tmp_path / ".loopkit").mkdir()
    data = {"version": 1, "pid": 77, "tool": None, "calls": 3, "ended_at": None}
    live.write(ws, data)
    assert live.read(ws, 77) == {"tool": None, "calls": 3, "ended_at": None}
    assert live.read(ws, 78) is None and live.read(ws, None) is None
    live.write(ws, {**data, "ended_at": "2026-12-05T10:00:00.000Z"})
    assert live.read(ws, 77) is None  # the turn is over
    live.write(ws, {**data, "version": 2})
    assert live.read(ws, 77) is None  # not a version this loopkit knows
    live.path_of(ws).write_text(json.dumps({**data, "text": "x" * live.MAX_READ}))
    assert live.read(ws, 77) is None
    live.path_of(ws).write_text("[1, 2")
    assert live.read(ws, 77) is None


NOW = datetime(2026, 12, 5, 10, 0, 45, tzinfo=UTC)


def test_the_running_call_on_one_line() -> None:
    running = {
        "tool": {
            "name": "Bash",
            "input": {"command": "pytest -x\n  tests/", "description": "d"},
            "since": "2026-12-05T10:00:07.000Z",
        },
        "turns": 7,
        "calls": 11,
        "tokens": {"input": 48000, "output": 210},
        "spend_usd": 0.31,
        "text": "Running the\ntests again.",
    }
    assert live_line(running, now=NOW) == (
        "▶ Bash: pytest -x tests/ (for 38s) · turn 7, 11 calls, 48.2k tokens, $0.31"
    )
    assert said_line(running) == 'said: "Running the tests again."'
    between = {"tool": None, "event_at": "2026-12-05T10:00:40.000Z", "calls": 1, "turns": 0}
    assert live_line(between, now=NOW) == "▷ between calls (5s since its last event) · 1 call"
    written = {"tool": {"name": "Write", "input": {"file_path": "src/a.py", "content": "x"}}}
    assert live_line(written, now=NOW) == "▶ Write: src/a.py"
    assert said_line({"text": None}) is None
