"""RequestStore.changed_since: which records were written since a moment, by a stat each."""

from __future__ import annotations

import os
import time
from pathlib import Path

from loopkit import config as config_mod
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


def test_only_records_written_since_are_named(ws: Path) -> None:
    store = RequestStore(Workspace.of(config_mod.load(ws)))
    assert store.changed_since(0) == []  # no requests/ folder yet
    for request_id in ("old", "new"):
        store.create(Request(request_id=request_id, prompt="Q?"))
    (ws / "requests" / "notes.txt").write_text("not a record")
    past = time.time_ns() - 3_600_000_000_000
    os.utime(ws / "requests" / "old.json", ns=(past, past))
    mark = time.time_ns() - 60_000_000_000
    assert store.changed_since(mark) == ["new"]
    assert store.changed_since(0) == ["old", "new"]  # oldest write first
    store.save(store.load("old"))  # a rewrite (an answer) makes it new again
    assert set(store.changed_since(mark)) == {"old", "new"}
