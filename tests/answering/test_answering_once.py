"""``answer`` in process: parsing by kind, exactly one winner, and what is refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.answering import answer
from loopkit.errors import BadInput, RequestConflict, RequestNotFound, UsageError
from loopkit.requests.answer import (
    APPROVAL_OPTIONS,
    QUESTION_OPTIONS,
    REVIEW_OPTIONS,
    already_answered,
    outcome_of,
    timed_out,
)
from loopkit.requests.models import Option
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

FLOWS = [Option("Flow A", "flow-a"), Option("Flow B", "flow-b")]
OPTIONS = {"question": FLOWS, "approval": APPROVAL_OPTIONS, "review": REVIEW_OPTIONS}
DECISION_KEYS = {"request_id", "chosen_option", "free_text", "parsed_decision", "resolved_at"}


def store_for(ws: Path) -> RequestStore:
    return RequestStore(Workspace.of(config_mod.load(ws)))


def make(store: RequestStore, kind: str = "question", request_id: str = "r1") -> Request:
    record = Request(
        request_id=request_id,
        prompt="Deploy v2 to production now?" if kind != "question" else "Which flow?",
        kind=kind,  # type: ignore[arg-type]
        options=list(OPTIONS[kind]),
    )
    store.create(record)
    return record


def raw(store: RequestStore, request_id: str = "r1") -> str:
    return store.path(request_id).read_text()


def test_a_question_is_answered_once_and_the_first_answer_stands(ws: Path) -> None:
    store = store_for(ws)
    make(store)
    result = answer(store, "r1", "b)", by="ana", via="cli")
    assert set(result.decision) == DECISION_KEYS and not result.deferred
    assert result.decision["chosen_option"] == "flow-b"
    data = json.loads(raw(store))
    assert data["status"] == "resolved"
    res = data["resolution"]
    assert (res["chosen_option"], res["by"], res["via"], res["reply"]) == (
        "flow-b",
        "ana",
        "cli",
        "b)",
    )
    assert outcome_of(store.load("r1")) == "chosen"
    before = raw(store)
    with pytest.raises(RequestConflict, match="the first answer stands"):
        answer(store, "r1", "A", by="bo", via="cli")
    assert raw(store) == before


def test_about_adds_fields_to_the_resolution(ws: Path) -> None:
    store = store_for(ws)
    make(store)
    answer(store, "r1", "A", by="ana", via="telegram", about={"telegram_user": 42})
    res = store.load("r1").resolution
    assert res is not None and res.extra["telegram_user"] == 42 and res.via == "telegram"
    assert json.loads(raw(store))["resolution"]["telegram_user"] == 42


def test_an_unmatched_reply_to_a_question_is_free_text(ws: Path) -> None:
    store = store_for(ws)
    make(store)
    decision = answer(store, "r1", "use Decimal, not float", by="ana", via="cli").decision
    assert decision["chosen_option"] is None
    assert decision["free_text"] == "use Decimal, not float"
    assert outcome_of(store.load("r1")) == "chosen"


def test_abort_on_the_default_options_is_aborted(ws: Path) -> None:
    store = store_for(ws)
    store.create(Request("r1", "Go on?", options=list(QUESTION_OPTIONS)))
    assert answer(store, "r1", "C", by="ana", via="cli").decision["chosen_option"] == "abort"
    assert outcome_of(store.load("r1")) == "aborted"


@pytest.mark.parametrize(
    ("reply", "outcome", "reason"),
    [
        ("approve", "approved", None),
        ("reject: the migration is not reversible", "rejected", "the migration is not reversible"),
        ("Request changes — rename the flag first", "changes_requested", "rename the flag first"),
        ("looks risky to me", "changes_requested", "looks risky to me"),
    ],
)
def test_approvals_keep_the_reason_and_never_guess_approval(
    ws: Path, reply: str, outcome: str, reason: str | None
) -> None:
    store = store_for(ws)
    make(store, "approval")
    answer(store, "r1", reply, by="ana", via="cli")
    record = store.load("r1")
    res = record.resolution
    assert res is not None
    assert record.status == "resolved" and res.outcome == outcome
    assert res.reason == reason
    assert outcome_of(record) == outcome


def test_words_that_pick_no_option_are_not_an_approval(ws: Path) -> None:
    store = store_for(ws)
    make(store, "review")
    decision = answer(store, "r1", "  looks   fine i guess ", by="ana", via="cli").decision
    assert decision["chosen_option"] == decision["parsed_decision"] == "changes_requested"
    record = store.load("r1")
    assert outcome_of(record) == "changes_requested"
    assert record.resolution is not None
    assert record.resolution.reason == "looks fine i guess"


def test_a_review_deferral_keeps_it_open(ws: Path) -> None:
    store = store_for(ws)
    make(store, "review")
    deferred = answer(store, "r1", "defer: no phone at hand", by="ana", via="cli")
    assert deferred.deferred
    record = store.load("r1")
    assert record.status == "deferred" and record.resolution is None and record.is_open
    assert record.deferrals[0]["reason"] == "no phone at hand"
    assert record.deferrals[0]["by"] == "ana"
    assert outcome_of(record) == "open"
    approved = answer(store, "r1", "approve", by="ana", via="cli")
    assert not approved.deferred
    assert outcome_of(store.load("r1")) == "approved"


@pytest.mark.parametrize("shared", [True, False], ids=["one-store", "a-store-each"])
def test_sixteen_concurrent_answers_one_winner(ws: Path, shared: bool) -> None:
    store = store_for(ws)
    make(store)
    replies = ["A", "B", "proceed", "flow a", "1", "2", "free text one", "b)", "a.",
               "Flow B", "maybe later", "work on it", "x", "y", "z", "2."]  # fmt: skip
    barrier = threading.Barrier(len(replies))
    results: list[tuple[str, object]] = []
    guard = threading.Lock()

    def reply_with(text: str) -> None:
        mine = store if shared else store_for(ws)
        barrier.wait()
        try:
            got: object = answer(mine, "r1", text, by=text, via="cli").decision
        except Exception as exc:  # collected and asserted on below
            got = exc
        with guard:
            results.append((text, got))

    threads = [threading.Thread(target=reply_with, args=(t,)) for t in replies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == len(replies)
    winners = [(t, d) for t, d in results if isinstance(d, dict)]
    losers = [d for _, d in results if not isinstance(d, dict)]
    assert len(winners) == 1
    assert all(isinstance(d, RequestConflict) for d in losers) and len(losers) == 15
    [(text, decision)] = winners
    res = store.load("r1").resolution
    assert res is not None
    assert res.by == text and res.parsed_decision == decision["parsed_decision"]


@pytest.mark.parametrize("empty", ["", "   ", "\n\t"])
def test_an_empty_reply_uses_up_nothing(ws: Path, empty: str) -> None:
    store = store_for(ws)
    make(store)
    before = raw(store)
    with pytest.raises(UsageError, match="empty reply"):
        answer(store, "r1", empty, by="ana", via="cli")
    assert raw(store) == before


def test_a_malformed_expected_updated_at_is_a_usage_error(ws: Path) -> None:
    store = store_for(ws)
    make(store)
    before = raw(store)
    with pytest.raises(UsageError, match="updated_at"):
        answer(store, "r1", "A", by="ana", via="cli", expected_updated_at="yesterday")
    assert raw(store) == before


def test_a_stale_expected_updated_at_is_a_conflict(ws: Path) -> None:
    store = store_for(ws)
    make(store)
    before = raw(store)
    with pytest.raises(RequestConflict, match="changed since"):
        answer(store, "r1", "A", by="ana", via="cli", expected_updated_at="2020-01-01T00:00:00Z")
    assert raw(store) == before
    current = store.load("r1").updated_at
    answer(store, "r1", "A", by="ana", via="cli", expected_updated_at=current)
    assert store.load("r1").status == "resolved"


@pytest.mark.parametrize(("kind", "reply"), [("question", "A"), ("review", "defer")])
def test_an_expired_request_takes_no_answer(ws: Path, kind: str, reply: str) -> None:
    store = store_for(ws)
    make(store, kind)
    _, closed = store.resolve("r1", timed_out("r1", "abort"), status="expired")
    assert closed
    before = raw(store)
    with pytest.raises(RequestConflict) as caught:
        answer(store, "r1", reply, by="ana", via="cli")
    message = str(caught.value)
    assert "expired" in message and "loopkit unblock" in message
    assert "first answer stands" not in message  # a timeout is not an answer
    assert raw(store) == before
    assert outcome_of(store.load("r1")) == "expired"


def test_already_answered_names_who_and_what(ws: Path) -> None:
    store = store_for(ws)
    make(store)
    answer(store, "r1", "B", by="ana", via="cli")
    message = str(already_answered(store.load("r1")))
    assert "'r1'" in message and "flow-b" in message and "by ana" in message
    assert "the first answer stands" in message


def test_an_unknown_or_unsafe_id_is_refused(ws: Path) -> None:
    store = store_for(ws)
    with pytest.raises(RequestNotFound):
        answer(store, "nope", "A", by="ana", via="cli")
    with pytest.raises(BadInput, match="is not allowed"):
        answer(store, "../x", "A", by="ana", via="cli")
    assert not (ws / "requests").exists() or list((ws / "requests").iterdir()) == []


def test_an_older_record_is_answered_and_keeps_unknown_fields(ws: Path) -> None:
    store = store_for(ws)
    store.folder.mkdir(parents=True)
    old = {
        "request_id": "old1",
        "created_at": "2026-11-01T10:00:00Z",
        "prompt": "Solve the captcha?",
        "options": [{"label": "Solve it", "value": "solve"}, {"label": "Skip", "value": "skip"}],
        "status": "open",
        "jobclaw_channel": "whatsapp",
    }
    store.path("old1").write_text(json.dumps(old))
    assert answer(store, "old1", "skip", by="ana", via="cli").decision["chosen_option"] == "skip"
    after = json.loads(raw(store, "old1"))
    assert after["jobclaw_channel"] == "whatsapp" and after["schema_version"] == 2
    assert after["status"] == "resolved"
