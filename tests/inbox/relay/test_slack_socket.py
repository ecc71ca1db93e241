"""Answers from a Slack app over Socket Mode, against a fake Slack on 127.0.0.1
(tests/fakeslack.py): clicks, thread replies, who may answer, exactly once, reconnects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation.escalator import Escalation, Escalator, parse_choice
from loopkit.fleet import Hubs
from loopkit.inbox.relay.slack_socket import SlackRelay
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakeslack import CHANNEL_ID, FakeSlack
from helpers import wait_until

ANA, BOB = "U0ANA", "U0BOB"


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(ack_timeout=0.5, disconnect_grace=0.3).start()
    try:
        yield fake
    finally:
        fake.close()


def make_config(ws: Path, slack: FakeSlack, **extra: str) -> Config:
    (ws / "loopkit.toml").write_text('[escalation]\nslack_mode = "socket"\n')
    return config_mod.load(ws, slack.env(**extra))


def block(
    config: Config, question: str = "Verify failed 3 times: how do I go on?"
) -> tuple[str, str]:
    """Escalate (a real chat.postMessage to the fake); the request id and the message's ts."""
    escalation = Escalation(
        question=question,
        context="task 'Round prices'",
        attempted=["iterations 1-3"],
        choices=[parse_choice(c) for c in ("Retry with a hint", "Skip the task", "Abort")],
    )
    result = Escalator(config).escalate(escalation)
    ref = result.request.delivery[-1].message_id
    assert isinstance(ref, str) and ref.startswith(f"{CHANNEL_ID}:"), result.request.delivery
    return result.request.request_id, ref.split(":", 1)[1]


def load(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture
def relay_of() -> Iterator[Any]:
    made: list[SlackRelay] = []

    def make(config: Config) -> SlackRelay:
        hubs = Hubs()
        store = RequestStore(Workspace.of(config), hub=hubs.for_config(config))
        stores = Stores(hubs.for_config)
        stores.add(config, store)
        relay = SlackRelay.relay(config.channels, hubs=hubs, stores=stores, here=store)
        relay.active.set()
        relay.start()
        made.append(relay)
        wait_until(relay.connected.is_set, 10, "the relay connects")
        return relay

    yield make
    for relay in made:
        relay.stop()


def test_a_click_resolves_the_block_and_updates_the_message(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    [post] = slack.called("chat.postMessage")
    buttons = post.body["blocks"][1]["elements"]
    assert [b["value"] for b in buttons] == [f"{request_id}:{i}" for i in range(3)]
    assert post.body["text"].startswith("[loopkit] blocked in ws on ")
    relay_of(config)
    slack.click(ANA, ts, 1)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "resolved")
    resolution = load(ws, request_id)["resolution"]
    assert resolution["chosen_option"] == "skip-the-task" and resolution["via"] == "slack"
    assert resolution["by"] == f"{ANA} (ana)" and resolution["by_id"] == ANA
    assert not (ws / "BLOCKED.md").exists()
    wait_until(lambda: slack.called("chat.update"), 5, "the message updated")
    message = slack.messages[(CHANNEL_ID, ts)]
    assert all(b["type"] == "section" for b in message["blocks"])  # no buttons left
    assert "Resolved: Skip the task — by ana" in message["blocks"][-1]["text"]["text"]
