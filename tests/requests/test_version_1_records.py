"""Records written by version 1 still load (SPEC section 15, "Typed records"): the lifecycle
booleans become one ``block`` state, a rewrite writes version 2 and loses nothing.

``records_v1.json`` holds records exactly as version 1's code wrote them (commit 41c87ef, run
in process with fake channels): one per lifecycle state, each kind of ending, and delivery
attempts of every channel and flag.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit.errors import BadInput
from loopkit.escalation import adoption, blockfile
from loopkit.escalation.escalator import Escalator
from loopkit.escalation.repair import repair
from loopkit.requests.migrate import migrate_v1
from loopkit.requests.models import DeliveryAttempt, Option, Resolution
from loopkit.requests.record import SCHEMA_VERSION, Request
from loopkit.requests.shape import V1_LIFECYCLE
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

V1: dict[str, dict[str, Any]] = json.loads((Path(__file__).parent / "records_v1.json").read_text())

# What each version-1 record is in version 2: (block, joined_to).
STATES = {
    "raised_telegram": ("raised", None),
    "raised_with_joined": ("raised", None),
    "adopted": ("adopted", None),
    "pending": ("pending", None),
    "joined_unnamed": ("joined", None),  # "joined_block": null — a block naming no request
    "joined_named": ("joined", V1["joined_named"]["joined_block"]),
    "asked_without_block": ("none", None),  # "not_raised": true
    "approval_rejected_with_reason": ("raised", None),
    "review_deferred": ("raised", None),
    "answered_telegram_note": ("raised", None),
    "expired_timeout": ("raised", None),
    "unblocked_by_hand": ("raised", None),
    "slack_retried_within_send": ("raised", None),
    "slack_hard_then_dial_failed": ("raised", None),
    "dial_hard_then_ok": ("raised", None),
    "telegram_reminder_repeat_interrupted": ("raised", None),
    "gate_approved_consumed": ("raised", None),
}


def store_for(ws: Path, channel: str = "none") -> RequestStore:
    config = config_mod.load(ws, {"LOOPKIT_HITL_CHANNEL": channel})
    return RequestStore(Workspace.of(config))


def put(ws: Path, data: dict[str, Any]) -> Path:
    folder = ws / "requests"
    folder.mkdir(exist_ok=True)
    path = folder / f"{data['request_id']}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def without(data: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in names}


def test_every_fixture_is_a_version_1_record_and_has_its_expected_state() -> None:
    assert set(V1) == set(STATES)
    assert all(record["schema_version"] == 1 for record in V1.values())
    assert SCHEMA_VERSION == 2


@pytest.mark.parametrize("name", sorted(STATES))
def test_a_version_1_record_loads_into_its_state(name: str) -> None:
    record = Request.from_dict(copy.deepcopy(V1[name]), source=f"{name}.json")
    assert (record.block, record.joined_to) == STATES[name]
    assert record.schema_version == 2
    assert not set(V1_LIFECYCLE) & set(record.extra)  # migrated, not kept as unknown
    assert record.has_own_block == (STATES[name][0] in ("pending", "raised", "adopted"))


@pytest.mark.parametrize("name", sorted(STATES))
def test_load_save_load_writes_version_2_and_keeps_everything_else(ws: Path, name: str) -> None:
    old = V1[name]
    path = put(ws, old)
    store = store_for(ws)
    first = store.load(old["request_id"])
    store.save(first)
    written = json.loads(path.read_text())
    assert written["schema_version"] == 2
    assert written["block"] == STATES[name][0]
    assert written.get("joined_to") == STATES[name][1]
    assert not set(V1_LIFECYCLE) & set(written)
    # Every other key and value — SPEC section 4's shape, resolution, delivery, options,
    # loopkit's own fields — is exactly what version 1 wrote.
    kept = ("schema_version", "updated_at", "block", "joined_to")
    assert without(written, *kept) == without(old, *kept, *V1_LIFECYCLE)
    second = store.load(old["request_id"])
    assert second == first  # updated_at included: save moved it on, in memory and on disk
    store.save(second)
    assert without(json.loads(path.read_text()), "updated_at") == without(written, "updated_at")


def test_the_typed_parts_of_version_1_records() -> None:
    load = {name: Request.from_dict(copy.deepcopy(data)) for name, data in V1.items()}
    assert load["raised_telegram"].options[1] == Option("Flow B", "flow-b", "migrates")
    assert load["raised_telegram"].delivery == [
        DeliveryAttempt(
            channel="telegram", at=V1["raised_telegram"]["delivery"][0]["at"], ok=True,
            status=200, message_id=41,
        )
    ]  # fmt: skip
    slack = load["slack_retried_within_send"].delivery
    assert [(d.channel, d.ok, d.status, d.error, d.within_send) for d in slack] == [
        ("slack", False, 500, "HTTP 500", False), ("slack", True, 200, None, True)
    ]  # fmt: skip
    failed = load["slack_hard_then_dial_failed"].delivery
    assert [(d.channel, d.status, d.hard) for d in failed] == [("slack", 404, False),
                                                               ("dial", -9, False)]  # fmt: skip
    dial = load["dial_hard_then_ok"].delivery
    assert [(d.channel, d.ok, d.status, d.hard) for d in dial] == [
        ("slack", False, 403, False), ("dial", False, "error", True), ("dial", True, 0, False)
    ]  # fmt: skip
    telegram = load["telegram_reminder_repeat_interrupted"].delivery
    assert [(d.ok, d.status, d.reminder, d.repeat, d.in_flight) for d in telegram] == [
        (True, 200, False, False, False),
        (True, 200, True, False, False),
        (False, "interrupted", False, False, False),
        (True, 200, False, True, False),
    ]
    rejected = load["approval_rejected_with_reason"].resolution
    assert rejected is not None
    assert (rejected.outcome, rejected.reason, rejected.by, rejected.via) == (
        "rejected", "the migration is not reversible", "ana", "cli"
    )  # fmt: skip
    noted = load["answered_telegram_note"].resolution
    assert noted is not None
    assert (noted.chosen_option, noted.note, noted.by_id, noted.by_name, noted.reply) == (
        "flow-b", "this task is obsolete", 4242, "Ana", "B, this task is obsolete"
    )  # fmt: skip
    expired = load["expired_timeout"].resolution
    assert expired is not None and (expired.by, expired.action) == ("timeout", "abort")
    assert load["expired_timeout"].status == "expired"
    deferred = load["review_deferred"]
    assert deferred.status == "deferred" and deferred.resolution is None
    assert deferred.deferrals[0]["reason"] == "no phone at hand"
    unblocked = load["unblocked_by_hand"].resolution
    assert unblocked is not None and unblocked.outcome == "unblocked"
    assert load["gate_approved_consumed"].consumed_at is not None
    assert load["raised_with_joined"].joined[0]["question"] == "Also: which currency?"


def test_another_machines_fleet_row_is_migrated_the_same_way() -> None:
    """A fleet row holds the record as its machine wrote it: ``Request.from_dict`` (what
    ``fleet.pg`` reads rows with) migrates it too, whatever version wrote it."""
    row = copy.deepcopy(V1["joined_named"])
    record = Request.from_dict(row)
    assert (record.block, record.joined_to) == ("joined", row["joined_block"])
    assert Request.from_dict(record.to_dict()) == record


def test_a_version_1_pending_record_is_finished_by_the_repair(ws: Path) -> None:
    pending = V1["pending"]
    put(ws, pending)
    escalator = Escalator(config_mod.load(ws, {"LOOPKIT_HITL_CHANNEL": "none"}))
    assert repair(escalator) == [f"request {pending['request_id']}: BLOCKED.md written now"]
    assert blockfile.request_id_of(ws / "BLOCKED.md") == pending["request_id"]
    assert escalator.store.load(pending["request_id"]).block == "raised"


def test_a_version_1_adopted_record_is_the_agents_block(ws: Path) -> None:
    adopted = V1["adopted"]
    put(ws, adopted)
    (ws / "BLOCKED.md").write_text("# Blocked\n\n## Question:\nWhich provider?\n")
    assert adoption.open_request(store_for(ws)) == adopted["request_id"]
    assert blockfile.remove_block(ws / "BLOCKED.md", store_for(ws).load(adopted["request_id"]))


@pytest.mark.parametrize(
    ("fields", "block", "joined_to"),
    [
        ({"adopted": True, "raised_block": True}, "adopted", None),
        ({"raised_block": True, "block_pending": True}, "pending", None),
        ({"raised_block": True}, "raised", None),
        ({"raised_block": True, "block_pending": False, "adopted": False}, "raised", None),
        ({"joined_block": "abc123"}, "joined", "abc123"),
        ({"joined_block": None}, "joined", None),  # how version 1 wrote ""
        ({"joined_block": ""}, "joined", None),
        ({"not_raised": True}, "none", None),
        ({}, "none", None),  # written before any of the flags existed
        # Never written by version 1: the first state in the docstring's order wins.
        ({"adopted": True, "block_pending": True}, "adopted", None),
        ({"raised_block": True, "joined_block": "abc123"}, "raised", None),
        ({"not_raised": True, "joined_block": "abc123"}, "joined", "abc123"),
    ],
)
def test_migrate_v1_maps_each_combination(
    fields: dict[str, Any], block: str, joined_to: str | None
) -> None:
    old = {"schema_version": 1, "request_id": "r1", "prompt": "Q?", "status": "open", "mine": [1]}
    old.update(fields)
    before = copy.deepcopy(old)
    new = migrate_v1(old)
    assert old == before  # the input is left as it was
    assert new["block"] == block and new.get("joined_to") == joined_to
    assert new["schema_version"] == 2 and new["mine"] == [1]
    assert not set(V1_LIFECYCLE) & set(new)
    record = Request.from_dict(old)
    assert (record.block, record.joined_to) == (block, joined_to)


def test_an_unversioned_record_is_migrated_as_version_1() -> None:
    old = without(V1["adopted"], "schema_version")
    assert Request.from_dict(old).block == "adopted"


def test_unknown_fields_survive_a_rewrite_at_every_level(ws: Path) -> None:
    old = copy.deepcopy(V1["answered_telegram_note"])
    old["from_the_future"] = {"x": [1, 2]}
    old["options"][0]["icon"] = "⭐"
    old["delivery"][0]["thread_ts"] = "1700000000.0001"
    old["resolution"]["slack_user"] = "U123"
    path = put(ws, old)
    store = store_for(ws)
    record = store.load(old["request_id"])
    assert record.extra == {"from_the_future": {"x": [1, 2]}}
    assert record.options[0].extra == {"icon": "⭐"}
    assert record.delivery[0].extra == {"thread_ts": "1700000000.0001"}
    assert record.resolution is not None and record.resolution.extra == {"slack_user": "U123"}
    store.save(record)
    written = json.loads(path.read_text())
    assert written["from_the_future"] == {"x": [1, 2]}
    assert written["options"][0]["icon"] == "⭐"
    assert written["delivery"][0]["thread_ts"] == "1700000000.0001"
    assert written["resolution"]["slack_user"] == "U123"
    assert store.load(old["request_id"]) == record


def test_a_version_2_record_round_trips(ws: Path) -> None:
    store = store_for(ws)
    record = Request(
        request_id="r2",
        prompt="Which flow?",
        options=[Option("Flow A", "a", "keeps the API"), Option("Flow B", "b")],
        delivery=[
            DeliveryAttempt(
                channel="telegram",
                at="2026-12-03T09:00:00.000Z",
                ok=False,
                status=500,
                error="HTTP 500",
            ),
            DeliveryAttempt(
                channel="telegram",
                at="2026-12-03T09:00:01.000Z",
                ok=True,
                status=200,
                message_id=7,
                within_send=True,
            ),
            DeliveryAttempt(channel="dial", at="2026-12-03T09:30:00.000Z", repeat=True),
        ],
        block="joined",
        joined_to="abc123",
    )
    store.create(record)
    written = json.loads(store.path("r2").read_text())
    assert written["schema_version"] == 2 and written["block"] == "joined"
    assert written["joined_to"] == "abc123"
    assert written["options"] == [
        {"label": "Flow A", "value": "a", "consequence": "keeps the API"},
        {"label": "Flow B", "value": "b"},
    ]
    assert written["delivery"][2] == {
        "channel": "dial", "at": "2026-12-03T09:30:00.000Z", "ok": None, "status": None,
        "error": None, "message_id": None, "repeat": True,
    }  # fmt: skip
    loaded = store.load("r2")
    assert loaded == record
    resolution = Resolution(
        request_id="r2", chosen_option="a", parsed_decision="a",
        resolved_at="2026-12-03T10:00:00Z", outcome="answered", by="ana", via="cli", reply="A",
    )  # fmt: skip
    closed, changed = store.resolve("r2", resolution)
    assert changed and store.load("r2") == closed
    assert json.loads(store.path("r2").read_text())["resolution"] == {
        "request_id": "r2", "chosen_option": "a", "free_text": None, "parsed_decision": "a",
        "resolved_at": "2026-12-03T10:00:00Z", "outcome": "answered", "by": "ana",
        "via": "cli", "reply": "A",
    }  # fmt: skip


def test_a_record_of_a_later_version_is_not_migrated() -> None:
    later = {"schema_version": 3, "request_id": "r3", "prompt": "Q?", "status": "open",
             "raised_block": True}  # fmt: skip
    record = Request.from_dict(later)
    assert record.schema_version == 3 and record.block == "none"
    assert record.extra == {"raised_block": True}  # unknown to this version: kept as it is


def test_a_version_1_lifecycle_field_of_the_wrong_type_is_named() -> None:
    old = {**V1["adopted"], "adopted": "yes"}
    with pytest.raises(BadInput, match=r"^r\.json: field 'adopted' must be true or false"):
        Request.from_dict(old, source="r.json")
