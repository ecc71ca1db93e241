"""events.jsonl is rotated at its size limit, three old files kept, no line lost or torn
while several writers share it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from loopkit import log


def emit(handler: log._JsonlFile, text: str) -> None:
    handler.write(text)


def test_rotates_at_the_limit_and_keeps_three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "ROTATE_AT", 2000)
    path = tmp_path / ".loopkit" / "events.jsonl"
    handler = log._JsonlFile(path)
    for number in range(400):
        emit(handler, json.dumps({"n": number, "pad": "x" * 40}))
    handler.close()
    names = sorted(p.name for p in path.parent.iterdir() if not p.name.endswith(".lock"))
    assert names == ["events.jsonl", "events.jsonl.1", "events.jsonl.2", "events.jsonl.3"]
    sizes = [(path.parent / name).stat().st_size for name in names]
    assert all(size < 2000 + 100 for size in sizes)
    # The newest lines are all there, in order, across the kept files.
    kept = [
        json.loads(line)["n"]
        for name in ["events.jsonl.3", "events.jsonl.2", "events.jsonl.1", "events.jsonl"]
        for line in (path.parent / name).read_text().splitlines()
    ]
    assert kept == list(range(400 - len(kept), 400))


def test_writers_in_step_lose_no_line_to_a_rotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log, "ROTATE_AT", 5_000)
    monkeypatch.setattr(log, "ROTATIONS_KEPT", 50)  # keep everything, to count it
    path = tmp_path / "events.jsonl"
    handlers = [log._JsonlFile(path) for _ in range(4)]

    def write(index: int, handler: log._JsonlFile) -> None:
        for number in range(500):
            emit(handler, json.dumps({"w": index, "n": number}))

    threads = [threading.Thread(target=write, args=(i, h)) for i, h in enumerate(handlers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = [
        json.loads(line)
        for file in tmp_path.iterdir()
        if file.name.startswith("events.jsonl") and not file.name.endswith(".lock")
        for line in file.read_text().splitlines()
    ]
    assert len(lines) == 2000
    assert {(one["w"], one["n"]) for one in lines} == {(w, n) for w in range(4) for n in range(500)}
    assert len(list(tmp_path.glob("events.jsonl.[0-9]*"))) > 3


def test_a_write_racing_a_new_setup_is_dropped_not_reopened(tmp_path: Path) -> None:
    handler = log._JsonlFile(tmp_path / "events.jsonl")
    handler.write("one")
    handler.close()  # a later setup() closed it; a thread still held it
    handler.write("two")
    assert (tmp_path / "events.jsonl").read_text() == "one\n" and handler._fd is None
