"""Hostile files: a FIFO at BLOCKED.md never hangs loopkit; configured paths stay inside
the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import Daemon, loopkit, wait_until


def test_a_fifo_at_blocked_md_is_an_error_not_a_hang(ws: Path) -> None:
    os.mkfifo(ws / "BLOCKED.md")
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\n')
    for args in (["check"], ["check", "--json"], ["run", "--exit-on-block"], ["status"]):
        done = loopkit("-C", str(ws), *args, timeout=20)
        assert done.returncode in (0, 65), (args, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr
    assert loopkit("-C", str(ws), "check", timeout=20).returncode == 65
    # The waiting daemon reports it once, stays blocked, and still stops on SIGTERM.
    with Daemon(ws) as daemon:
        wait_until(lambda: "not a regular file" in daemon.stderr(), 20, "the one-line report")
        daemon.proc.terminate()
        assert daemon.wait(10) == 143


def test_configured_paths_cannot_leave_the_workspace(ws: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    for key in ('blocked_file = "../victim.txt"', 'blocked_file = "/etc/passwd"'):
        (ws / "loopkit.toml").write_text(f"[escalation]\n{key}\n")
        done = loopkit("-C", str(ws), "unblock")
        assert done.returncode == 78 and "leaves the workspace" in done.stderr
    (ws / "loopkit.toml").write_text('[loop]\ntask_file = "../plan.md"\n')
    assert loopkit("-C", str(ws), "status").returncode == 78
    assert victim.read_text() == "keep me\n"
