"""SPEC §28 on the phone: the reply rules hold on Telegram and Slack as they do for
``loopkit reply`` — a qualified approval of a gate typed as a reply approves nothing (and is
not even asked to be confirmed), a retraction or an English word near an alias chooses
nothing — against the strict fake Bot API and the fake Slack on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation import gate
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.inbox.relay.slack_socket import SlackRelay
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.supervisor import triggers
from loopkit.workspace import Workspace

from fakeserver import FakeServer
from fakeslack import CHANNEL_ID, FakeSlack
from helpers import relay_for, wait_until

TOKEN = "464646:AAQualifiedRepliesTokenNotReal_xyz"
CHAT = 4646
ANA = {"id": 111, "first_name": "Ana"}
SLACK_ANA = "U0ANA"
RM = ["rm", "-rf", "data"]
NOT_APPROVED = "not approved: reply `approve` alone to approve"
QUALIFIED = ["approve the rollback instead", "approve in dry-run mode", "approve nothing",
             "approve 0", "approve: false", "yes, but only the staging table"]  # fmt: skip
TAKEN_BACK = ["stop — no, continue", "C - scratch that", "abort, never mind", "quite", "slip",
              "gain", "atop"]  # fmt: skip


def load(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def gated(config: Config) -> tuple[str, str | int | None]:
    """A gate on ``rm -rf data``, sent: its request id and its message's reference."""
    store = RequestStore(Workspace.of(config))
    record = gate.gate(config, RM, cwd=str(config.workspace), store=store).record
    return record.request_id, store.load(record.request_id).delivery[-1].message_id


def supervisors_block(config: Config) -> tuple[str, str | int | None]:
    asked = triggers.verify_failures(task="round prices", failures=3, command="pytest",
                                     last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    request = Escalator(config).escalate(asked).request
    return request.request_id, request.delivery[-1].message_id


# --- Telegram ---------------------------------------------------------------------------


def telegram(ws: Path, server: FakeServer) -> Config:
    return config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT), "LOOPKIT_HITL_TELEGRAM_API": server.url,
    })  # fmt: skip


def reply_on_telegram(server: FakeServer, message_id: object, text: str) -> None:
    server.push_update(message={
        "message_id": 900, "from": ANA, "chat": {"id": CHAT, "type": "private"}, "text": text,
        "reply_to_message": {"message_id": message_id, "text": "[loopkit] blocked …"},
    })  # fmt: skip


@pytest.mark.parametrize("text", QUALIFIED)
def test_a_qualified_approval_typed_on_telegram_approves_nothing(
    ws: Path, server: FakeServer, text: str
) -> None:
    config = telegram(ws, server)
    request_id, message_id = gated(config)
    reply_on_telegram(server, message_id, text)
    relay_for(config, poll_timeout=0).poll_once()
    after = load(ws, request_id)
    assert after["status"] == "resolved" and after["resolution"]["outcome"] != "approved"
    assert after["resolution"]["reply"] == text
    [edit] = server.calls("/editMessageText")  # recorded at once: no "Yes, approve" asked
    assert NOT_APPROVED in edit.body["text"]
    assert edit.body["reply_markup"] == {"inline_keyboard": []}
    # ... and the gate does not run the command.
    again = gate.gate(config, RM, cwd=str(ws), store=RequestStore(Workspace.of(config)))
    assert again.state != "ran"


def test_approve_alone_on_telegram_still_asks_for_the_second_tap(
    ws: Path, server: FakeServer
) -> None:
    config = telegram(ws, server)
    request_id, message_id = gated(config)
    reply_on_telegram(server, message_id, "approve 👍")
    relay_for(config, poll_timeout=0).poll_once()
    assert load(ws, request_id)["status"] == "open"
    [edit] = server.calls("/editMessageText")
    callback = edit.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    assert callback == f"{request_id}:0:confirm"


@pytest.mark.parametrize("text", TAKEN_BACK)
def test_a_retraction_or_a_word_near_an_alias_on_telegram_chooses_nothing(
    ws: Path, server: FakeServer, text: str
) -> None:
    config = telegram(ws, server)
    request_id, message_id = supervisors_block(config)
    reply_on_telegram(server, message_id, text)
    relay_for(config, poll_timeout=0).poll_once()
    resolution = load(ws, request_id)["resolution"]
    assert resolution["chosen_option"] is None and resolution["free_text"] == text
    [edit] = server.calls("/editMessageText")
    assert edit.body["text"].endswith(
        "→ no option matched: kept as free text; the agent gets it as a hint with Retry"
    )


# --- Slack ------------------------------------------------------------------------------


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(ack_timeout=0.5, disconnect_grace=0.3).start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def slack_relay(slack: FakeSlack) -> Iterator[Any]:
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
        wait_until(lambda: slack.open_links() >= 1, 10, "the link at the fake")
        return relay

    yield make
    for relay in made:
        relay.stop()


def slack_config(ws: Path, slack: FakeSlack) -> Config:
    (ws / "loopkit.toml").write_text('[escalation]\nslack_mode = "socket"\n')
    return config_mod.load(ws, slack.env())


def thread_of(ref: object) -> str:
    assert isinstance(ref, str) and ref.startswith(f"{CHANNEL_ID}:"), ref
    return ref.split(":", 1)[1]


@pytest.mark.parametrize("text", ["approve the rollback instead", "approve: false"])
def test_a_qualified_approval_in_a_slack_thread_approves_nothing(
    ws: Path, slack: FakeSlack, slack_relay: Any, text: str
) -> None:
    config = slack_config(ws, slack)
    request_id, ref = gated(config)
    slack_relay(config)
    slack.reply(SLACK_ANA, thread_of(ref), text)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "recorded")
    assert load(ws, request_id)["resolution"]["outcome"] == "changes_requested"
    wait_until(lambda: slack.called("chat.update"), 5, "the message updated")
    shown = slack.messages[(CHANNEL_ID, thread_of(ref))]["blocks"][-1]["text"]["text"]
    assert NOT_APPROVED in shown


@pytest.mark.parametrize("text", ["stop — no, continue", "quite"])
def test_a_retraction_in_a_slack_thread_chooses_nothing(
    ws: Path, slack: FakeSlack, slack_relay: Any, text: str
) -> None:
    config = slack_config(ws, slack)
    request_id, ref = supervisors_block(config)
    slack_relay(config)
    slack.reply(SLACK_ANA, thread_of(ref), text)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "recorded")
    resolution = load(ws, request_id)["resolution"]
    assert resolution["chosen_option"] is None and resolution["free_text"] == text
