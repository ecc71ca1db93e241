"""Answers from a Slack app over Socket Mode, against a fake Slack on 127.0.0.1
(tests/fakeslack.py): clicks, thread replies, who may answer, exactly once, reconnects."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.home import Registry
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
def relay_of(slack: FakeSlack) -> Iterator[Any]:
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
        # The client sees its handshake done before the fake's handler registers the link.
        wait_until(lambda: slack.open_links() >= 1, 10, "the link at the fake")
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
    hint = (ws / "BLOCKED.md").read_text().splitlines()[-1]
    assert hint.startswith("To answer: tap a button in Slack, run `loopkit unblock --reply A`")
    relay_of(config)
    slack.click(ANA, ts, 1)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "resolved")
    resolution = load(ws, request_id)["resolution"]
    assert resolution["chosen_option"] == "skip-the-task" and resolution["via"] == "slack"
    assert resolution["by"] == f"{ANA} (ana)" and resolution["by_id"] == ANA
    wait_until(lambda: not (ws / "BLOCKED.md").exists(), 5, "BLOCKED.md removed")
    wait_until(lambda: slack.called("chat.update"), 5, "the message updated")
    message = slack.messages[(CHANNEL_ID, ts)]
    assert all(b["type"] == "section" for b in message["blocks"])  # no buttons left
    assert "Resolved: Skip the task — by ana" in message["blocks"][-1]["text"]["text"]


def ephemerals(slack: FakeSlack, user: str) -> list[str]:
    return [c.body["text"] for c in slack.called("chat.postEphemeral") if c.body["user"] == user]


def test_a_strangers_click_decides_nothing_and_is_told_not_allowed(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    config = make_config(ws, slack, LOOPKIT_HITL_SLACK_ALLOWED_USERS=f"{ANA}, U0CARL")
    request_id, ts = block(config)
    relay = relay_of(config)
    slack.click(BOB, ts, 2, name="bob")
    wait_until(lambda: ephemerals(slack, BOB), 5, "the stranger is told")
    assert ephemerals(slack, BOB)[0].startswith("not allowed")
    assert load(ws, request_id)["status"] == "open" and (ws / "BLOCKED.md").exists()
    assert not slack.called("chat.update")
    # ... and a thread reply of theirs neither.
    slack.reply(BOB, ts, "C")
    wait_until(lambda: len(ephemerals(slack, BOB)) == 2, 5, "told again")
    assert load(ws, request_id)["status"] == "open"
    slack.click(ANA, ts, 0)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "Ana decides")
    assert load(ws, request_id)["resolution"]["chosen_option"] == "retry-with-a-hint"
    assert relay.connections == 1


def test_two_clicks_make_one_decision(ws: Path, slack: FakeSlack, relay_of: Any) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    relay_of(config)
    slack.click(ANA, ts, 0)
    slack.click(BOB, ts, 2, name="bob")
    wait_until(lambda: ephemerals(slack, BOB), 5, "the second click is told")
    assert (
        ephemerals(slack, BOB)[0].startswith("request ") or "already" in ephemerals(slack, BOB)[0]
    )
    resolution = load(ws, request_id)["resolution"]
    assert resolution["chosen_option"] == "retry-with-a-hint" and resolution["by_id"] == ANA
    assert len(slack.called("chat.update")) == 1


def test_a_redelivered_envelope_is_applied_once(ws: Path, slack: FakeSlack, relay_of: Any) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    relay = relay_of(config)
    # (the block's own message event, sent before the relay listened, is delivered first)
    wait_until(lambda: all(e.acked or not e.sent_at for e in slack.envelopes), 5, "settled")
    slack.lose_acks = 1  # the click's acknowledgement is lost: Slack sends it again
    first = slack.click(ANA, ts, 1)
    again = wait_until(
        lambda: [
            e
            for e in slack.envelopes
            if e.kind == "interactive" and e.retry_attempt == 1 and e.acked
        ],
        5,
        "retried",
    )
    assert isinstance(again, list) and again[0].payload == first.payload
    assert again[0].envelope_id != first.envelope_id
    # Slack may send it once more, acknowledged or not (a reconnect): dropped as well.
    last = slack.redeliver(again[0])
    wait_until(lambda: last.acked, 5, "acknowledged")
    wait_until(lambda: relay.applied >= 1, 5, "applied")
    assert load(ws, request_id)["resolution"]["chosen_option"] == "skip-the-task"
    assert len(slack.called("chat.update")) == 1
    assert not slack.called("chat.postEphemeral")  # not even told "already answered"
    # Every envelope was acknowledged, each at once (well within Slack's 3 s).
    clicks = [e for e in slack.envelopes if e.kind == "interactive"]
    assert all(e.acked for e in clicks if e.envelope_id != first.envelope_id)


@pytest.mark.parametrize("reason", ["refresh_requested", "warning"])
def test_a_disconnect_mid_block_reconnects_and_the_next_click_lands(
    ws: Path, slack: FakeSlack, relay_of: Any, reason: str
) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    relay = relay_of(config)
    slack.disconnect(reason)
    wait_until(lambda: slack.connects == 2 and slack.open_links() == 1, 10, "a new connection")
    slack.click(ANA, ts, 1)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "the click lands")
    assert relay.connected.is_set()


def test_a_dropped_connection_is_opened_again_with_backoff(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    relay = relay_of(config)
    relay.first_backoff = 0.25  # (1 s in use: the doubling is the subject, not the unit)
    slack.app_token = "xapp-1-A0FAKEAPP1-3333-rotated"  # the old token no longer opens one
    slack.drop()
    # The first one at once, refused; the next after 0.25 s, refused; then 0.5 s …
    # How soon a dropped link is noticed is slack_sdk's (its monitor); the backoff is the subject.
    wait_until(lambda: len(slack.called("apps.connections.open")) >= 2, 15, "the first try")
    refused = time.monotonic()
    wait_until(lambda: len(slack.called("apps.connections.open")) >= 3, 5, "a retry")
    assert time.monotonic() - refused > 0.2  # backing off, not spinning
    assert not relay.connected.is_set()
    slack.app_token = config.channels.slack_app_token or ""
    wait_until(relay.connected.is_set, 15, "connected again")
    slack.click(ANA, ts, 2)
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "the click lands")


def test_a_thread_reply_with_words_decides_like_loopkit_reply(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    relay_of(config)
    slack.reply(ANA, "1.000001", "A")  # a reply in another thread: no block's
    slack.reply(ANA, ts, "B, this task is obsolete")
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "resolved")
    resolution = load(ws, request_id)["resolution"]
    assert resolution["chosen_option"] == "skip-the-task"
    assert resolution["note"] == "this task is obsolete" and resolution["via"] == "slack"
    wait_until(lambda: slack.called("chat.update"), 5, "updated")
    text = slack.messages[(CHANNEL_ID, ts)]["blocks"][-1]["text"]["text"]
    assert 'note: "this task is obsolete"' in text


def test_a_button_of_another_message_is_forged(ws: Path, slack: FakeSlack, relay_of: Any) -> None:
    config = make_config(ws, slack)
    first, ts1 = block(config)
    (ws / "BLOCKED.md").unlink()
    second, _ = block(config, "Which database?")
    relay_of(config)
    slack.click(ANA, ts1, 0, value=f"{second}:0")  # the second's id on the first's message
    wait_until(lambda: ephemerals(slack, ANA), 5, "told")
    assert ephemerals(slack, ANA)[0].startswith("unknown button")
    assert load(ws, second)["status"] == "open" and load(ws, first)["status"] == "open"


def test_three_loops_share_one_app_and_one_connection(
    tmp_path: Path, slack: FakeSlack, relay_of: Any
) -> None:
    configs, blocks = [], []
    for name in ("api", "web", "etl"):
        root = tmp_path / name
        root.mkdir()
        config = make_config(root, slack)
        Registry().register(root, name)  # as `loopkit run` and `escalate` do
        configs.append(config)
        blocks.append(block(config))
    first = relay_of(configs[0])
    # The other loops' relays wait on the app's lease: one connection per app per machine.
    hubs = Hubs()
    others = []
    for config in configs[1:]:
        store = RequestStore(Workspace.of(config), hub=hubs.for_config(config))
        stores = Stores(hubs.for_config)
        stores.add(config, store)
        other = SlackRelay.relay(config.channels, hubs=hubs, stores=stores, here=store)
        other.active.set()
        other.start()
        others.append(other)
    try:
        for index, (config, (request_id, ts)) in enumerate(zip(configs, blocks, strict=True)):
            slack.click(ANA, ts, index)
            wait_until(
                lambda c=config, r=request_id: load(c.workspace, r)["status"] == "resolved",
                5,
                f"loop {index} answered",
            )
        assert slack.connects == 1 and slack.open_links() == 1
        assert not any(o.connected.is_set() for o in others)
        first.stop()  # the holder goes: another loop's relay takes the app over
        wait_until(lambda: any(o.connected.is_set() for o in others), 10, "taken over")
        # The fake counts a connection once its handler runs, which may be after the hello.
        wait_until(lambda: slack.connects == 2, 5, "one new connection")
        assert slack.open_links() == 1
    finally:
        for other in others:
            other.stop()


def test_an_irreversible_approval_takes_two_clicks(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    from loopkit.escalation import gate

    config = make_config(ws, slack)
    drop = ["psql", "postgres://app:hunter2@db/prod", "-c", "DROP TABLE users"]
    store = RequestStore(Workspace.of(config))
    record = gate.gate(config, drop, cwd=str(ws), store=store).record
    ref = store.load(record.request_id).delivery[-1].message_id
    ts = str(ref).split(":", 1)[1]
    relay_of(config)
    approve = next(
        i
        for i, o in enumerate(store.load(record.request_id).options)
        if o.label.lower().startswith("approve")
    )
    slack.click(ANA, ts, approve)
    wait_until(lambda: ephemerals(slack, ANA), 5, "asked to confirm")
    assert ephemerals(slack, ANA)[0].startswith("Approve `psql 'postgres://app:***@db/prod'")
    assert load(ws, record.request_id)["status"] == "open"  # nothing recorded yet
    buttons = [b for b in slack.messages[(CHANNEL_ID, ts)]["blocks"] if b["type"] == "actions"]
    confirm = next(e for e in buttons[0]["elements"] if e.get("value", "").endswith(":confirm"))
    assert confirm["text"]["text"].startswith("Yes, approve")
    slack.click(ANA, ts, buttons[0]["elements"].index(confirm))
    wait_until(lambda: load(ws, record.request_id)["status"] == "resolved", 5, "approved")
    assert load(ws, record.request_id)["resolution"]["outcome"] == "approved"
    assert "hunter2" not in json.dumps([c.body for c in slack.calls])


def test_every_envelope_is_acknowledged_before_the_work(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    relay = relay_of(config)
    release = threading.Event()
    handle = relay.router.handle

    def slow(kind: str, payload: dict[str, Any]) -> None:
        release.wait(10)  # the work takes long (a slow disk, a fleet far away)
        handle(kind, payload)

    relay.router.handle = slow
    click = slack.click(ANA, ts, 1)
    wait_until(lambda: click.acked, 2, "acknowledged while the work waits")
    assert load(ws, request_id)["status"] == "open"
    release.set()
    wait_until(lambda: load(ws, request_id)["status"] == "resolved", 5, "then applied")
    assert not [e for e in slack.envelopes if e.kind == "interactive" and e.retry_attempt]


def test_a_payload_handled_before_a_restart_is_not_applied_again(
    ws: Path, slack: FakeSlack, relay_of: Any
) -> None:
    config = make_config(ws, slack)
    request_id, ts = block(config)
    first = relay_of(config)
    click = slack.click(ANA, ts, 1)
    wait_until(lambda: first.applied >= 1 and slack.called("chat.update"), 5, "applied")
    first.stop()  # loopkit restarts; Slack sends the click once more to the new connection
    second = relay_of(config)
    # (the client may see its handshake done before the fake's handler registers the link)
    wait_until(lambda: slack.connects == 2 and slack.open_links() == 1, 10, "only the new link")
    again = slack.redeliver(click)
    slack.reply(ANA, "1.000001", "hello")  # something new after it, routed in order
    wait_until(lambda: second.applied >= 1, 5, "what came after routed")
    wait_until(lambda: again.acked, 5, "the redelivery acknowledged")  # (acks are the fake's)
    assert second.applied == 1  # the redelivered click was dropped
    assert not slack.called("chat.postEphemeral") and len(slack.called("chat.update")) == 1
    assert load(ws, request_id)["resolution"]["chosen_option"] == "skip-the-task"
