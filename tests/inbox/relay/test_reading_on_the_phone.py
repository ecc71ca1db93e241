"""SPEC §16 on Telegram: a tap or a reply is answered with how it was read — in the tap's
answer and at the end of the edited message — against a fake Bot API on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation.escalator import Escalator
from loopkit.supervisor import triggers

from fakeserver import FakeServer
from helpers import relay_for

TOKEN = "424243:AAReadingTestTokenNotARealOne_xyz"
CHAT = 4243
ANA = {"id": 111, "first_name": "Ana"}


def make_config(ws: Path, server: FakeServer) -> Config:
    return config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram",
        "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT),
        "LOOPKIT_HITL_TELEGRAM_API": server.url,
    })  # fmt: skip


def supervisors_block(config: Config) -> tuple[str, int]:
    """The supervisor's own Retry / Skip / Abort question, sent to the fake Bot API."""
    asked = triggers.verify_failures(task="round prices", failures=3, command="pytest",
                                     last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    request = Escalator(config).escalate(asked).request
    message_id = request.delivery[-1].message_id
    assert isinstance(message_id, int)
    return request.request_id, message_id


def test_a_tap_is_answered_with_its_reading(ws: Path, server: FakeServer) -> None:
    config = make_config(ws, server)
    request_id, message_id = supervisors_block(config)
    server.push_update(callback_query={
        "id": "cb1", "from": ANA, "data": f"{request_id}:1",
        "message": {"message_id": message_id, "chat": {"id": CHAT, "type": "private"}},
    })  # fmt: skip
    relay_for(config, poll_timeout=0).poll_once()
    [ack] = server.calls("/answerCallbackQuery")
    assert ack.body["text"].endswith("→ B) Skip the task (letter B)")
    [edit] = server.calls("/editMessageText")
    resolved = r"\n\nResolved: Skip the task — by Ana, \d\d:\d\d UTC"
    assert re.search(resolved + r"\n→ B\) Skip the task \(letter B\)\Z", edit.body["text"])


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        ("stop, I'll fix it by hand",
         '→ C) Abort the loop ("stop": another word for it); note: "I\'ll fix it by hand"'),
        ("abort?",
         "→ no option matched: kept as free text; the agent gets it as a hint with Retry"),
        ("abrot", '→ C) Abort the loop ("abrot" read as a typo of it)'),
    ],
)  # fmt: skip
def test_a_text_reply_is_answered_with_its_reading(
    ws: Path, server: FakeServer, reply: str, told: str
) -> None:
    config = make_config(ws, server)
    _, message_id = supervisors_block(config)
    server.push_update(message={
        "message_id": 900, "from": ANA, "chat": {"id": CHAT, "type": "private"}, "text": reply,
        "reply_to_message": {"message_id": message_id, "text": "[loopkit] blocked …"},
    })  # fmt: skip
    relay_for(config, poll_timeout=0).poll_once()
    [edit] = server.calls("/editMessageText")
    assert edit.body["message_id"] == message_id
    assert edit.body["text"].endswith("\n" + told)
