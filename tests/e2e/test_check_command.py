"""``loopkit check``: exit 2 while the configured block file is there, 0 once it is gone; the
fast path and click agree."""

from __future__ import annotations

from pathlib import Path

from helpers import loopkit


def test_check_through_click_matches_fast_path(ws: Path) -> None:
    (ws / "BLOCKED.md").write_text("# Blocked\n")
    # "check -v" is not a fast-path form: it goes through click and must agree.
    assert loopkit("-v", "-C", str(ws), "check").returncode == 2
    assert loopkit("-C", str(ws), "check").returncode == 2


def test_check_honours_blocked_file_setting(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nblocked_file = "STOP.md"\n')
    (ws / "BLOCKED.md").write_text("not ours\n")
    assert loopkit("check", cwd=ws).returncode == 0
    (ws / "STOP.md").write_text("# Blocked\n")
    assert loopkit("check", cwd=ws).returncode == 2


def test_check_with_corrupt_config_that_sets_blocked_file(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nblocked_file = "STOP.md\n')
    done = loopkit("check", cwd=ws)
    assert done.returncode == 78
    assert done.stderr.count("\n") == 1 and "loopkit.toml:2" in done.stderr


def test_check_in_a_workspace_loopkit_init_wrote(ws: Path) -> None:
    assert loopkit("-C", str(ws), "init", "--agent", "true").returncode == 0
    assert loopkit("-C", str(ws), "check").returncode == 0
    (ws / "BLOCKED.md").write_text("# Blocked\n")
    assert loopkit("-C", str(ws), "check").returncode == 2
