"""The workspace digest (SPEC section 19) on a real git repository and on a plain folder: a
content change, a commit, a new file and a deletion move it; touching a file, loopkit's own
files, the block file and ignored files do not; unchanged files are not read again."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loopkit.supervisor.snapshot import Snapshots

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def commit(ws: Path, message: str) -> None:
    subprocess.run([*GIT, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", message], cwd=ws, check=True)


@pytest.fixture(params=["git", "plain"])
def repo(request: pytest.FixtureRequest, ws: Path) -> Path:
    (ws / "app.py").write_text("print('hi')\n")
    (ws / ".gitignore").write_text("build/\n")
    if request.param == "git":
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        commit(ws, "init")
    return ws


def test_what_moves_the_digest_and_what_does_not(repo: Path) -> None:
    snaps = Snapshots(repo, excluded=("BLOCKED.md",))
    first = snaps.take().digest
    os.utime(repo / "app.py", (1, 1))  # touched: mtime only
    (repo / ".loopkit").mkdir()
    (repo / ".loopkit" / "state.json").write_text("{}")
    (repo / "requests").mkdir()
    (repo / "requests" / "r1.json").write_text("{}")
    (repo / "BLOCKED.md").write_text("# Blocked\n")
    assert snaps.take().digest == first
    (repo / "app.py").write_text("print('hello')\n")
    edited = snaps.take().digest
    assert edited != first
    (repo / "app.py").write_text("print('hi')\n")
    assert snaps.take().digest == first  # back where it was: the same state
    (repo / "new.py").write_text("x = 1\n")
    assert snaps.take().digest not in (first, edited)
    (repo / "new.py").unlink()
    (repo / "app.py").unlink()
    assert snaps.take().digest != first


def test_a_commit_is_progress_and_ignored_files_are_not(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("build/\n")
    (ws / "a.txt").write_text("a\n")
    commit(ws, "one")
    snaps = Snapshots(ws)
    taken = snaps.take()
    assert taken.head is not None and len(taken.head) == 40
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("binary")
    assert snaps.take() == taken
    subprocess.run([*GIT, "commit", "-q", "--allow-empty", "-m", "two"], cwd=ws, check=True)
    assert snaps.take().digest != taken.digest


def test_a_changed_file_is_read_again_only_when_its_stat_moved(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "big.bin").write_bytes(b"x" * 1000)
    snaps = Snapshots(ws, git=None)
    snaps.take()
    opened: list[str] = []
    real_open = open

    def spy(path: object, *args: object, **kwargs: object) -> object:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", spy)
    snaps.take()
    assert opened == []
    (ws / "big.bin").write_bytes(b"y" * 1000)
    snaps.take()
    assert opened == [str(ws / "big.bin")]


def test_a_fifo_in_the_tree_is_never_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")  # opening it to read would wait for a writer forever
    snaps = Snapshots(ws, git=None)
    first = snaps.take().digest
    assert snaps.take().digest == first
