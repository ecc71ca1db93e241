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


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("loopkit: error")]
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    return lines[0]


def test_a_fifo_at_loopkit_toml_is_a_config_error_not_a_hang(ws: Path) -> None:
    os.mkfifo(ws / "loopkit.toml")
    for args in (["check"], ["status"], ["run"], ["escalate", "-q", "Q?", "-c", "c", "-a", "a",
                 "--choice", "A — a"]):  # fmt: skip
        done = loopkit("-C", str(ws), *args, timeout=20)
        assert done.returncode == 78, (args, done.stderr)
        assert "a FIFO, not a file" in one_line(done.stderr)


def test_a_fifo_at_the_template_falls_back_to_the_packaged_one(ws: Path) -> None:
    (ws / "templates").mkdir()
    os.mkfifo(ws / "templates" / "BLOCKED.md.j2")
    done = loopkit("-C", str(ws), "escalate", "-q", "Q?", "-c", "c", "-a", "a",
                   "--choice", "A — a", timeout=20)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "a FIFO, not a file" in done.stderr and "packaged template" in done.stderr
    assert "## Question:" in (ws / "BLOCKED.md").read_text()


def test_fifos_where_records_and_state_live_are_one_line_errors(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\n')
    (ws / "requests").mkdir()
    os.mkfifo(ws / "requests" / "abc123.json")
    done = loopkit("-C", str(ws), "requests", "show", "abc123", timeout=20)
    assert done.returncode == 65 and "a FIFO, not a file" in one_line(done.stderr)
    listed = loopkit("-C", str(ws), "requests", timeout=20)
    assert listed.returncode == 0 and "abc123" in listed.stdout + listed.stderr
    (ws / ".loopkit").mkdir()
    os.mkfifo(ws / ".loopkit" / "state.json")
    for args in (["status"], ["run", "--max-iterations", "1"]):
        done = loopkit("-C", str(ws), *args, timeout=20)
        assert done.returncode == 1, (args, done.stderr)
        assert "state.json: unreadable (a FIFO, not a file)" in one_line(done.stderr)


def test_a_fifo_as_the_task_file_is_no_task_not_a_hang(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\ntask_file = "PLAN.md"\n')
    os.mkfifo(ws / "PLAN.md")
    done = loopkit("-C", str(ws), "run", "--max-iterations", "1", timeout=20)
    assert done.returncode == 0, done.stderr


def test_a_dangling_symlink_at_blocked_md_keeps_the_question(ws: Path) -> None:
    (ws / "BLOCKED.md").symlink_to(ws / "nowhere")
    done = loopkit("-C", str(ws), "escalate", "-q", "Q?", "-c", "c", "-a", "a",
                   "--choice", "A — a", timeout=20)  # fmt: skip
    assert done.returncode == 65
    assert "is a symbolic link, not a file" in one_line(done.stderr)
    (saved,) = (ws / "requests").glob("*.json")
    assert "Q?" in saved.read_text()


def test_a_loopkit_toml_nested_thousands_deep_is_a_config_error(ws: Path) -> None:
    (ws / "loopkit.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    done = loopkit("-C", str(ws), "status", timeout=20)
    assert done.returncode == 78 and "nested deeper" in one_line(done.stderr)


def test_a_symlink_at_blocked_md_is_never_read_through(ws: Path, tmp_path: Path) -> None:
    """An agent that links BLOCKED.md to another file gets its target neither adopted nor sent:
    the link is in the way, and the one-line error says it is a symbolic link."""
    secret = tmp_path / "elsewhere.md"
    secret.write_text("## Question:\nIs SECRET-7731 the password?\n")
    agent = f"ln -s {secret} BLOCKED.md\n"
    (ws / "agent.sh").write_text(agent)
    (ws / "loopkit.toml").write_text(
        '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "true"\npause = "0s"\n'
    )
    done = loopkit("-C", str(ws), "run", "--exit-on-block", timeout=30)
    assert done.returncode == 65, done.stderr
    assert "is a symbolic link" in done.stderr
    assert "SECRET-7731" not in done.stdout + done.stderr
    for record in (ws / "requests").glob("*.json") if (ws / "requests").exists() else []:
        assert "SECRET-7731" not in record.read_text()
    assert (ws / "BLOCKED.md").is_symlink()  # left as it is, for a human to look at
    assert loopkit("-C", str(ws), "check").returncode != 0
