from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from loopkit import config
from loopkit.datarecord import replace
from loopkit.errors import BadInput, RequestConflict, RequestNotFound
from loopkit.requests.models import Option, Resolution
from loopkit.requests.record import Request, new_id, validate_id
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


def store_for(ws: Path) -> RequestStore:
    return RequestStore(Workspace.of(config.load(ws, {})))


@pytest.mark.parametrize("bad", ["../x", "a/b", "", ".hidden", "-x", "x" * 65, "a b", "é"])
def test_bad_ids_are_refused(bad: str) -> None:
    with pytest.raises(BadInput):
        validate_id(bad)


def test_generated_ids_are_12_hex() -> None:
    for _ in range(20):
        value = new_id()
        assert len(value) == 12 and all(c in "0123456789abcdef" for c in value)


def test_round_trip_keeps_unknown_fields(ws: Path) -> None:
    store = store_for(ws)
    record = Request(request_id="r1", prompt="Q?")
    store.create(record)
    path = ws / "requests" / "r1.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    data["from_the_future"] = {"x": [1, 2]}
    path.write_text(json.dumps(data))
    loaded = store.load("r1")
    loaded.status = "resolved"
    store.save(loaded)
    again = json.loads(path.read_text())
    assert again["from_the_future"] == {"x": [1, 2]}
    assert again["status"] == "resolved"
    assert again["schema_version"] == 2
    assert again["updated_at"] > data["updated_at"]


def test_aliases_and_how_a_reply_was_read_are_written_only_when_set(ws: Path) -> None:
    store = store_for(ws)
    options = [Option("Retry", "retry"), Option("Abort the loop", "abort", aliases=("stop",))]
    store.create(Request(request_id="r1", prompt="Q?", options=options))
    path = ws / "requests" / "r1.json"
    assert json.loads(path.read_text())["options"] == [
        {"label": "Retry", "value": "retry"},
        {"label": "Abort the loop", "value": "abort", "aliases": ["stop"]},
    ]
    assert store.load("r1").options == options
    store.resolve("r1", Resolution(request_id="r1", chosen_option="retry"))
    assert "matched_by" not in json.loads(path.read_text())["resolution"]
    store.save(replace(store.load("r1"), resolution=Resolution(matched_by="alias")))
    assert json.loads(path.read_text())["resolution"]["matched_by"] == "alias"


def test_spec_field_order(ws: Path) -> None:
    store = store_for(ws)
    store.create(Request(request_id="r1", prompt="Q?"))
    keys = list(json.loads((ws / "requests" / "r1.json").read_text()))
    spec = ["request_id", "request_key", "created_at", "updated_at", "kind", "situation",
            "policy", "prompt", "options", "recommendation", "timeout_default", "context_refs",
            "status", "delivery", "resolution"]  # fmt: skip
    assert [k for k in keys if k in spec] == spec


def test_older_schema_is_upgraded_on_read(ws: Path) -> None:
    (ws / "requests").mkdir()
    old = {
        "request_id": "old1",
        "created_at": "2026-01-01T00:00:00Z",
        "situation": "s",
        "policy": "p",
        "prompt": "Old question?",
        "options": [{"label": "Go", "value": "go"}],
        "timeout_default": {"after_minutes": 30, "action": "skip"},
        "context_refs": [],
        "status": "open",
    }
    (ws / "requests" / "old1.json").write_text(json.dumps(old))
    record = store_for(ws).load("old1")
    assert record.kind == "question"
    assert record.delivery == [] and record.resolution is None
    assert record.updated_at == "2026-01-01T00:00:00Z"
    assert record.schema_version == 2 and record.block == "none"


def test_corrupt_record_is_bad_input_and_left_alone(ws: Path) -> None:
    (ws / "requests").mkdir()
    path = ws / "requests" / "bad.json"
    path.write_text('{"request_id": "bad", ')
    with pytest.raises(BadInput, match=r"bad\.json:1: not valid JSON"):
        store_for(ws).load("bad")
    assert path.read_text() == '{"request_id": "bad", '


def test_missing_and_duplicate(ws: Path) -> None:
    store = store_for(ws)
    with pytest.raises(RequestNotFound):
        store.load("nope")
    store.create(Request(request_id="r1", prompt="Q?"))
    with pytest.raises(RequestConflict):
        store.create(Request(request_id="r1", prompt="Q?"))


def test_listing_survives_a_corrupt_record(ws: Path) -> None:
    store = store_for(ws)
    store.create(Request(request_id="good", prompt="Q?"))
    (ws / "requests" / "broken.json").write_text("not json")
    items = dict(store.all())
    assert isinstance(items["good"], Request)
    assert isinstance(items["broken"], BadInput)
