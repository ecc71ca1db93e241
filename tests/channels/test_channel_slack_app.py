"""Channel ``slack`` in ``slack_mode = "socket"`` (the Slack app) against a fake Slack on
127.0.0.1: the block as Block Kit, Slack's errors as one line with the fix, the ladder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import channels
from loopkit import config as config_mod
from loopkit.channels.slack_app import SlackAppChannel
from loopkit.config import ChannelSettings
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.message import Message, Reminder

from fakeslack import BOT_TOKEN, CHANNEL_ID, FakeSlack


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    try:
        yield fake
    finally:
        fake.close()


def settings(slack: FakeSlack, **over: object) -> ChannelSettings:
    base = ChannelSettings(
        slack_mode="socket",
        slack_bot_token=slack.bot_token,
        slack_app_token=slack.app_token,
        slack_channel=CHANNEL_ID,
        slack_api=slack.api,
    )
    return ChannelSettings(**{**{f: getattr(base, f) for f in base.__slots__}, **over})


def message(question: str = "Which payment flow?") -> Message:
    return Message(
        request_id="r-20261202-0001",
        repo="shop",
        at="2026-12-02T13:11:06Z",
        question=question,
        context="Feature: checkout",
        attempted=("read PROMPT.md",),
        choices=("Flow A", "Flow B"),
        link="http://laptop.vpn:8765/r/abc/r-20261202-0001",
    )


def test_the_block_is_the_five_lines_and_one_button_per_choice(slack: FakeSlack) -> None:
    channel = channels.create("slack", settings(slack))
    assert isinstance(channel, SlackAppChannel)
    outcome = channel.send(message("Use <!channel> & ping everyone?"))
    assert outcome.ok is True
    [post] = slack.called("chat.postMessage")
    assert post.token == BOT_TOKEN and post.body["channel"] == CHANNEL_ID
    ts = str(outcome.message_id).removeprefix(f"{CHANNEL_ID}:")
    assert (CHANNEL_ID, ts) in slack.messages  # the message id: channel and ts, for updates
    # Nothing in a question can mention the channel: Slack's control characters escaped.
    assert (
        "&lt;!channel&gt; &amp; ping" in post.body["text"] and "<!channel>" not in post.body["text"]
    )
    section, actions = post.body["blocks"]
    assert section["text"]["text"].splitlines()[1] == "Q: Use <!channel> & ping everyone?"
    assert [(b["text"]["text"], b.get("value")) for b in actions["elements"]] == [
        ("A) Flow A", "r-20261202-0001:0"),
        ("B) Flow B", "r-20261202-0001:1"),
        ("Open", None),
    ]
    assert actions["elements"][2]["url"].endswith("/r-20261202-0001")


def test_a_reminder_is_a_reply_in_the_blocks_thread(slack: FakeSlack) -> None:
    channel = SlackAppChannel(settings(slack))
    first = channel.send(message())
    reminder = Reminder("r-20261202-0001", "shop", "Which payment flow?", 7200,
                        reply_to=first.message_id)  # fmt: skip
    assert channel.send(reminder).ok
    post = slack.called("chat.postMessage")[-1]
    assert post.body["thread_ts"] == str(first.message_id).split(":", 1)[1]
    assert "blocks" not in post.body


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"members": set()}, "not_in_channel — the app is not in C0LOOPS: type /invite"),
        ({"bot_scopes": ()}, "missing_scope — the app lacks the scope chat:write: add it"),
        ({"bot_token": "xoxb-rotated"}, "invalid_auth — LOOPKIT_HITL_SLACK_BOT_TOKEN is not valid"),
    ],
)
def test_slacks_errors_are_one_line_with_the_fix_and_hard(
    slack: FakeSlack, change: dict[str, object], expected: str
) -> None:
    given = settings(slack)
    for key, value in change.items():
        setattr(slack, key, value)
    outcome = SlackAppChannel(given).send(message())
    assert outcome.ok is False and outcome.hard is True
    assert outcome.error is not None and "\n" not in outcome.error
    assert outcome.error.startswith(f"chat.postMessage: {expected}")
    assert BOT_TOKEN not in outcome.error


def test_misshapen_tokens_are_named_with_their_fix(slack: FakeSlack) -> None:
    found = SlackAppChannel(settings(slack, slack_bot_token="xapp-1-A1-2-x",
                                     slack_app_token="xoxb-1")).problems()  # fmt: skip
    assert found[0].startswith("LOOPKIT_HITL_SLACK_BOT_TOKEN does not start with xoxb-")
    assert found[1].startswith("LOOPKIT_HITL_SLACK_APP_TOKEN does not start with xapp-")
    assert not slack.calls


def test_a_hard_failure_hands_over_to_the_next_rung(ws: Path, slack: FakeSlack) -> None:
    slack.members = set()  # the app was never invited
    out = ws / "dialled.txt"
    (ws / "loopkit.toml").write_text(
        '[escalation]\nchannel = ["slack", "dial"]\nslack_mode = "socket"\n'
    )
    env = slack.env(LOOPKIT_HITL_DIAL_CMD=f"sh -c 'cat > {out}'")
    env.pop("LOOPKIT_HITL_CHANNEL")
    config = config_mod.load(ws, env)
    escalation = Escalation(question="Which flow?", context="checkout", attempted=[],
                            choices=[parse_choice("Flow A"), parse_choice("Flow B")])  # fmt: skip
    record = Escalator(config).escalate(escalation).request
    assert [(d.channel, d.ok) for d in record.delivery] == [("slack", False), ("dial", True)]
    assert record.delivery[0].hard and "not_in_channel" in str(record.delivery[0].error)
    assert out.read_text().startswith("[loopkit] blocked in ws on ")
