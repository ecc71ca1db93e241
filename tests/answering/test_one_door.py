"""The answering service is the one door (SPEC §27): who may answer is checked there for
every caller, the block goes with the answer, and every other surface of the process is told
once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.answering import answer, dismiss, unblock
from loopkit.answering.service import Answered, Answering, Confirm
from loopkit.answering.who import (
    Answerer,
    SlackAllowed,
    SlackUser,
    TelegramAllowed,
    TelegramUser,
)
from loopkit.errors import AgentAnswer, NotAllowed
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.escalation.gate import approval_request
from loopkit.fleet import Hubs
from loopkit.requests.locate import Stores
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


def raise_block(ws: Path) -> tuple[RequestStore, str]:
    config = config_mod.load(ws)
    store = RequestStore(Workspace.of(config))
    result = Escalator(config, store=store).escalate(
        Escalation("Which flow?", "checkout", ["read PROMPT.md"],
                   [parse_choice("Flow A — old API"), parse_choice("Flow B — migration")])
    )  # fmt: skip
    return store, result.request.request_id


def service(store: RequestStore) -> Answering:
    return Answering(stores=Stores(lambda _c: store.hub), hubs=Hubs(), here=store)


class Teller:
    def __init__(self, via: str) -> None:
        self.via = via
        self.shown: list[str] = []
        self.done = threading.Event()

    def show_outcome(self, record: Request) -> None:
        self.shown.append(record.status)
        self.done.set()


@pytest.mark.parametrize(
    "call",
    [
        lambda store, rid: answer(store, rid, "A", by="agent"),
        lambda store, rid: dismiss(store, rid, by="agent"),
        lambda store, rid: unblock(store, by="agent", reply="A"),
        lambda store, rid: unblock(store, by="agent"),
    ],
    ids=["answer", "dismiss", "unblock --reply", "unblock"],
)
def test_the_python_api_refuses_an_agents_process(
    ws: Path, monkeypatch: pytest.MonkeyPatch, call: object
) -> None:
    store, rid = raise_block(ws)
    monkeypatch.setenv("LOOPKIT_AGENT_SESSION", "a-supervised-run")
    with pytest.raises(AgentAnswer):
        call(store, rid)  # type: ignore[operator]
    assert store.load(rid).status == "open" and (ws / "BLOCKED.md").exists()


def test_a_chat_or_user_not_allowed_is_refused_by_the_service_itself(ws: Path) -> None:
    store, rid = raise_block(ws)
    door = service(store)
    telegram = TelegramAllowed("42", frozenset({7}))
    strangers = [
        Answerer(by="x", via="telegram", origin=TelegramUser(telegram, {"id": 43}, 7)),
        Answerer(by="x", via="telegram", origin=TelegramUser(telegram, {"id": 42}, 8)),
        Answerer(by="x", via="slack", origin=SlackUser(SlackAllowed(frozenset({"U1"})), "U2")),
        Answerer(by="x", via="slack", origin=SlackUser(SlackAllowed(frozenset({"U1"})), None)),
    ]
    for who in strangers:
        with pytest.raises(NotAllowed):
            door.answer(rid, "A", who, confirmed=True)
    assert store.load(rid).status == "open"
    ana = Answerer(by="ana", via="telegram", origin=TelegramUser(telegram, {"id": 42}, 7))
    assert isinstance(door.answer(rid, "A", ana, confirmed=True), Answered)


def test_a_persons_own_chat_answers_only_the_workspaces_that_list_people(ws: Path) -> None:
    """A chat let in as someone's [[escalation.people]] chat (another workspace's) cannot
    answer a question of a workspace that lists nobody: that one is the group chat's."""
    store, rid = raise_block(ws)  # no people listed here
    door = service(store)
    telegram = TelegramAllowed("42", frozenset(), lambda: frozenset({"99"}))
    ana_elsewhere = Answerer(by="ana", via="telegram", origin=TelegramUser(telegram, {"id": 99}, 7))
    with pytest.raises(NotAllowed):
        door.answer(rid, "A", ana_elsewhere, confirmed=True)
    assert store.load(rid).status == "open"
    group = Answerer(by="ben", via="telegram", origin=TelegramUser(telegram, {"id": 42}, 8))
    assert isinstance(door.answer(rid, "A", group, confirmed=True), Answered)


def test_an_answer_lifts_its_block_and_tells_every_other_surface_once(ws: Path) -> None:
    store, rid = raise_block(ws)
    door = service(store)
    phone, slack = Teller("telegram"), Teller("slack")
    door.add_teller(phone)
    door.add_teller(slack)
    done = door.answer(rid, "B", Answerer(by="ana", via="slack"), confirmed=True)
    assert isinstance(done, Answered) and done.lifted and not (ws / "BLOCKED.md").exists()
    assert phone.done.wait(10)
    for _ in range(2):  # the supervisor sees the block go, and asks again
        door.tell(done.record, skip="slack")
    assert phone.shown == ["resolved"]  # once
    assert slack.shown == []  # the surface that answered shows it itself


def test_an_unconfirmed_p0_approval_records_nothing(ws: Path) -> None:
    config = config_mod.load(ws)
    store = RequestStore(Workspace.of(config))
    record = approval_request(
        config, key="gate:1", prompt="Approve `rm -rf data`?", situation="Command: rm -rf data",
        policy="loopkit gate", trigger="gate", attempted="nothing",
        binding={"argv": ["rm", "-rf", "data"], "cwd": str(ws), "sha256": "0" * 64},
    )  # fmt: skip
    store.create(record)
    door = service(store)
    asked = door.answer(record.request_id, "approve", Answerer(by="ana", via="inbox"),
                        confirmed=False)  # fmt: skip
    assert isinstance(asked, Confirm) and "cannot be undone" in asked.question
    assert store.load(record.request_id).status == "open"
    done = door.answer(record.request_id, "approve", Answerer(by="ana", via="inbox"),
                       confirmed=True)  # fmt: skip
    assert isinstance(done, Answered) and done.record.resolution is not None
    assert done.record.resolution.outcome == "approved"


def test_telling_under_way_ends_before_the_process_does(ws: Path) -> None:
    """A follow-up claimed in the record and cut off by the process's exit would be told by
    nobody (SPEC §29): ``finish`` waits for the background telling, within its bound."""
    store, request_id = raise_block(ws)
    service = Answering(stores=Stores(), hubs=Hubs(), here=store)
    release, shown = threading.Event(), threading.Event()

    class Slow:
        via = "slow"

        def show_outcome(self, record: Request) -> None:
            release.wait(10)
            shown.set()

    service.add_teller(Slow())
    service.answer(request_id, "A", Answerer(by="ana", via="cli"), confirmed=True)
    service.finish(timeout=0.05)  # bounded: it does not wait past its time
    assert not shown.is_set()
    release.set()
    service.finish(timeout=10)
    assert shown.is_set()
