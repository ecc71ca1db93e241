from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from loopkit import atomicfile


def test_write_json_is_0600_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    atomicfile.write_json(target, {"a": 1})
    atomicfile.write_json(target, {"a": 2})
    assert target.read_text() == '{\n  "a": 2\n}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_create_text_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "BLOCKED.md"
    assert atomicfile.create_text(target, "first")
    assert not atomicfile.create_text(target, "second")
    assert target.read_text() == "first"
    (tmp_path / "dir").mkdir()
    assert not atomicfile.create_text(tmp_path / "dir", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["BLOCKED.md", "dir"]


def test_create_text_race_has_one_winner(tmp_path: Path) -> None:
    target = tmp_path / "BLOCKED.md"
    wins: list[int] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        barrier.wait()
        if atomicfile.create_text(target, f"writer {n}\n"):
            wins.append(n)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1
    assert target.read_text() == f"writer {wins[0]}\n"


def test_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "state.json"
    atomicfile.write_json(target, {"v": 1})

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    try:
        atomicfile.write_json(target, {"v": 2})
    except OSError:
        pass
    else:
        raise AssertionError("the write should have failed")
    monkeypatch.undo()
    assert target.read_text() == '{\n  "v": 1\n}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]
