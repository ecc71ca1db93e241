"""``-C DIR``: resolved once, on the fast path and through click alike."""

from __future__ import annotations

from pathlib import Path

from helpers import loopkit


def test_fast_path_bad_workspace_is_a_usage_error(ws: Path) -> None:
    done = loopkit("-C", str(ws / "missing"), "check")
    assert done.returncode == 64 and "is not a folder" in done.stderr


def test_a_relative_workspace_is_resolved_once(tmp_path: Path) -> None:
    """`loopkit -C ws run` from the parent: every file lands in ws/, none in ws/ws/."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\npause = "0s"\n')
    done = loopkit("-C", "ws", "run", "--max-iterations", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (ws / ".loopkit" / "events.jsonl").is_file()
    assert (ws / ".loopkit" / "state.json").is_file()
    assert not (ws / "ws").exists()
