"""SPEC §16, a quiet week loses no tap: after a week without updates Telegram restarts
``update_id`` at a random value, so the offset is a confirmation, never a filter. In process,
against the fake Bot API (as strict as the reference: ``tests/fakeserver.py``) on a clock
only the test moves — a week of quiet is simulated, never waited."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation.escalator import Escalation, Escalator, parse_choice

from fakeserver import FakeServer
from helpers import Calendar

TOKEN = "464646:AAQuietWeekTestTokenNotARealOne_xy"
CHAT = 4646
ANA = {"id": 111, "first_name": "Ana"}
DAY = timedelta(days=1)


class Crash(BaseException):
    """The process dies here: nothing after it runs, nothing catches it."""


@pytest.fixture
def calendar(server: FakeServer) -> Calendar:
    """The poller's clock and the fake Bot API's; after a week of quiet its ids restart
    lower — the case that swallowed taps behind a stored offset."""
    moved = Calendar()
    server.now = moved.now
    server.lower_after_quiet = True
    return moved


@pytest.fixture
def config(ws: Path, server: FakeServer) -> Config:
    return config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT), "LOOPKIT_HITL_TELEGRAM_API": server.url,
    })  # fmt: skip


def block(config: Config, question: str = "How do I go on?") -> tuple[str, int]:
    """Escalate (a real sendMessage to the fake); returns the request id and message id."""
    choices = [parse_choice(c) for c in ("Retry", "Skip the task", "Abort")]
    escalation = Escalation(question=question, context="task 'Round prices'",
                            attempted=["iterations 1-3"], choices=choices)  # fmt: skip
    request = Escalator(config).escalate(escalation).request
    return request.request_id, int(request.delivery[-1].message_id)


def tap(server: FakeServer, request_id: str, index: int, message_id: int, query: str) -> int:
    return server.push_update(callback_query={
        "id": query, "from": ANA, "data": f"{request_id}:{index}",
        "message": {"message_id": message_id, "chat": {"id": CHAT}, "text": "five lines"},
    })  # fmt: skip


def reply(server: FakeServer, text: str, reply_to: int | None, message_id: int) -> int:
    message: dict[str, Any] = {"message_id": message_id, "from": ANA, "chat": {"id": CHAT},
                               "text": text}  # fmt: skip
    if reply_to is not None:
        message["reply_to_message"] = {"message_id": reply_to, "text": "five lines"}
    return server.push_update(message=message)


def record(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def acks(server: FakeServer) -> list[str]:
    return [c.body["text"] for c in server.calls("/answerCallbackQuery")]


def get_updates(server: FakeServer, **body: Any) -> list[int]:
    response = httpx.post(f"{server.url}/bot{TOKEN}/getUpdates", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return [u["update_id"] for u in response.json()["result"]]


def test_the_fake_bot_api_is_as_strict_as_the_reference(
    server: FakeServer, calendar: Calendar
) -> None:
    """Confirmed by offset for everyone, kept 24 hours, ids restarted after a quiet week."""
    first, second = server.push_update(message={}), server.push_update(message={})
    assert get_updates(server, offset=second) == [second]
    assert get_updates(server) == [second]  # the first was confirmed: gone for everyone
    calendar.advance(timedelta(hours=25))
    assert get_updates(server) == []  # kept a day, no longer
    third = server.push_update(message={})
    assert third == second + 1  # a day is no quiet week: sequential
    calendar.advance(7 * DAY)
    restarted = server.push_update(message={})
    assert restarted < first  # a week without updates: a random id, here a lower one
    assert get_updates(server, offset=third + 1) == []  # an offset above it confirms it
    assert get_updates(server) == []  # ... and it is gone
    ids = [server.push_update(message={}) for _ in range(3)]
    assert get_updates(server, limit=2) == ids[:2]
    assert get_updates(server, offset=-1) == ids[2:]  # a negative offset keeps the last ones
