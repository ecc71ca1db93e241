"""Exit codes the command line maps: usage errors are 64 (never click's 2, which means
blocked), help is 0, an unsafe request id is refused (65)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import files, loopkit


@pytest.mark.parametrize(
    "args",
    [
        ["escalate", "--context", "c", "--attempted", "a", "--choice", "A"],  # no --question
        ["escalate", "--question", "q", "--bogus"],
        ["no-such-command"],
        ["-C", "/no/such/folder", "check", "-v"],
        [],
    ],
)
def test_usage_errors_exit_64_never_2(ws: Path, args: list[str]) -> None:
    done = loopkit(*args, cwd=ws)
    assert done.returncode == 64, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    if args:
        assert len(done.stderr.strip().splitlines()) == 1


def test_help_exits_0(ws: Path) -> None:
    for args in (["--help"], ["escalate", "--help"], ["check", "--help"]):
        done = loopkit(*args, cwd=ws)
        assert done.returncode == 0 and "Usage:" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["reply", "--request-id", "../x", "--reply", "A"],
        ["requests", "show", "../../etc/passwd"],
        ["ask", "-s", "Which?", "-p", "p", "--request-id", "../x"],
        ["requests", "wait", "a/b"],
    ],
)
def test_path_traversal_ids_are_refused(ws: Path, args: list[str]) -> None:
    done = loopkit("-C", str(ws), *args)
    assert done.returncode == 65, done.stderr
    assert "is not allowed" in done.stderr
    assert files(ws) == []
