"""A reminder on Telegram: one line, no buttons, a reply to the block's message; and the
mobile rubric on the block's own message."""

from __future__ import annotations

from loopkit.channels.telegram import TelegramChannel
from loopkit.config import ChannelSettings
from loopkit.message import Message, Reminder

from fakeserver import FakeServer

TOKEN = "123456:AAE-reminder-test-token-xyz12"


def channel(server: FakeServer) -> TelegramChannel:
    settings = ChannelSettings(telegram_token=TOKEN, telegram_chat="42", telegram_api=server.url)
    return TelegramChannel(settings, sleep=lambda _: None)


def test_a_reminder_replies_to_the_block_s_message(server: FakeServer) -> None:
    reminder = Reminder("r1", "shop", "Which payment flow?", waited=7200, reply_to=101)
    outcome = channel(server).send(reminder)
    assert outcome.ok is True
    [call] = server.calls("/sendMessage")
    assert call.body["text"] == "[loopkit] still blocked in shop for 2h: Which payment flow?"
    assert call.body["reply_parameters"] == {"message_id": 101, "allow_sending_without_reply": True}
    assert "reply_markup" not in call.body


def test_what_is_sent_follows_the_mobile_rubric(server: FakeServer) -> None:
    long = "Should the checkout 🚀 use " + "the new flow " * 20 + "?"
    message = Message("r2", "shop", "2026-12-03T09:00:00Z", long, "ctx", ("tried",),
                      ("A label that is far too long for a button", "B"))  # fmt: skip
    assert channel(server).send(message).ok is True
    [call] = server.calls("/sendMessage")
    question = call.body["text"].splitlines()[1]
    assert len(question) <= len("Q: ") + 120 and question.endswith("…") and "🚀" not in question
    buttons = [row[0]["text"] for row in call.body["reply_markup"]["inline_keyboard"]]
    assert buttons == ["A) A label that is far too…", "B) B"]
    assert all(len(b) <= len("A) ") + 24 for b in buttons)
