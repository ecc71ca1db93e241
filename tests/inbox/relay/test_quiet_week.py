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

from loopkit import clock, log
from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.home.bot import KEEP_HANDLED, MAX_HANDLED, OffsetFile, Position

from fakeserver import FakeServer
from helpers import Calendar, Crash, CrashAtSave, offset_file, relay_for

TOKEN = "464646:AAQuietWeekTestTokenNotARealOne_xy"
CHAT = 4646
ANA = {"id": 111, "first_name": "Ana"}
DAY = timedelta(days=1)


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


@pytest.mark.parametrize("first", ["tap", "text reply"])
def test_a_tap_after_the_ids_restart_lower_lands(
    ws: Path, server: FakeServer, calendar: Calendar, config: Config, first: str
) -> None:
    answered, answered_message = block(config, "Which flow?")
    old = tap(server, answered, 1, answered_message, "cb-old")
    poller = relay_for(config, poll_timeout=0, clock=calendar)
    assert poller.poll_once() == 1 and record(ws, answered)["status"] == "resolved"
    calendar.advance(3 * DAY)
    assert poller.poll_once() == 0 and server.offsets()[-1] == old + 1  # still confirming
    calendar.advance(4 * DAY)  # a week without updates: Telegram restarts its ids
    request_id, message_id = block(config)
    if first == "tap":
        new = tap(server, request_id, 1, message_id, "cb-new")
    else:
        new = reply(server, "Skip the task", reply_to=message_id, message_id=77)
    assert new < old  # what the stored offset would swallow
    restarted = relay_for(config, poll_timeout=0, clock=calendar)  # a restart, or not:
    for each in (poller, restarted):  # the same either way
        assert each.offsets.load() == Position(old + 1, calendar.now() - 7 * DAY)
    assert poller.poll_once() == 1
    assert server.offsets()[-1] is None  # the stale offset was dropped, not sent
    resolution = record(ws, request_id)["resolution"]
    assert resolution["chosen_option"] == "skip-the-task" and resolution["via"] == "telegram"
    if first == "tap":
        assert acks(server)[-1].startswith("Resolved: Skip the task — by Ana")
    assert "Resolved: Skip the task — by Ana" in server.calls("/editMessageText")[-1].body["text"]
    assert offset_file(TOKEN).exists()
    assert poller.offsets.load() == Position(new + 1, calendar.now())
    # Then everything goes on as before: the next tap and a text reply land too, and a tap
    # on the request answered before the quiet week is still told "already answered".
    third, third_message = block(config, "Deploy now?")
    tap(server, answered, 0, answered_message, "cb-again")
    reply(server, "Abort", reply_to=third_message, message_id=78)
    assert restarted.poll_once() == 2 and server.offsets()[-1] == new + 1
    assert "already resolved" in acks(server)[-1]
    assert record(ws, answered)["resolution"]["chosen_option"] == "skip-the-task"
    assert record(ws, third)["resolution"]["chosen_option"] == "abort"


def test_an_offset_quiet_for_six_days_is_dropped_once(
    ws: Path, server: FakeServer, calendar: Calendar, config: Config
) -> None:
    request_id, message_id = block(config)
    update = tap(server, request_id, 0, message_id, "cb")
    poller = relay_for(config, poll_timeout=0, clock=calendar)
    poller.poll_once()
    calendar.advance(6 * DAY - timedelta(minutes=1))
    poller.poll_once()
    assert server.offsets()[-1] == update + 1
    calendar.advance(timedelta(minutes=2))
    with log.capture() as logs:
        poller.poll_once()
        poller.poll_once()
    assert server.offsets()[-2:] == [None, None]
    dropped = [e for e in logs if e["event"] == "telegram_offset_dropped"]
    assert len(dropped) == 1 and "no update for 6 days" in dropped[0]["msg"]
    # A wall clock set back by more than the quiet time makes the offset just as suspect.
    OffsetFile(TOKEN).save(Position(update + 1, calendar.now() + 7 * DAY))
    poller.poll_once()
    assert server.offsets()[-1] is None


def test_an_update_redelivered_after_a_crash_is_acknowledged_never_applied_twice(
    ws: Path, server: FakeServer, calendar: Calendar, config: Config
) -> None:
    first, message_id = block(config)
    # A plain message answers the one open block; a second thought follows in the same batch.
    reply(server, "Skip the task", reply_to=None, message_id=80)
    tap(server, first, 2, message_id, "cb-abort")
    crashing = relay_for(config, poll_timeout=0, clock=calendar)
    crashing.offsets = CrashAtSave(crashing.offsets)
    with pytest.raises(Crash):
        crashing.poll_once()
    assert record(ws, first)["resolution"]["chosen_option"] == "skip-the-task"
    assert "already resolved" in acks(server)[-1]
    second, _ = block(config, "Deploy now?")  # now the one open block
    calendar.advance(timedelta(minutes=5))
    restarted = relay_for(config, poll_timeout=0, clock=calendar)
    assert restarted.poll_once() == 2  # Telegram serves both again: never confirmed
    assert record(ws, second)["status"] == "open"  # the old message answered nothing new
    assert record(ws, first)["resolution"]["chosen_option"] == "skip-the-task"
    assert acks(server)[-1] == "already answered"  # the redelivered tap: no spinning phone
    assert len(server.calls("/editMessageText")) == 1
    assert restarted.poll_once() == 0  # and now they are confirmed


def test_handled_updates_are_kept_eight_days_and_bounded(calendar: Calendar) -> None:
    offsets = OffsetFile(TOKEN)
    start = calendar.now()
    offsets.save(Position(501, start))
    offsets.mark("500:cb:a", start)
    offsets.mark("499:m:1:7", start + DAY)
    assert offsets.handled(["500:cb:a", "499:m:1:7", "498:cb:b"]) == {"500:cb:a", "499:m:1:7"}
    offsets.mark("12:cb:c", start + KEEP_HANDLED + timedelta(seconds=1))
    assert offsets.handled(["500:cb:a", "499:m:1:7", "12:cb:c"]) == {"499:m:1:7", "12:cb:c"}
    assert offsets.load() == Position(501, start)  # marks keep the offset
    for n in range(MAX_HANDLED + 5):
        offsets.mark(f"{n}:cb:x", start + 2 * DAY + timedelta(seconds=n))
    saved = json.loads(offset_file(TOKEN).read_text())
    assert len(saved["handled"]) == MAX_HANDLED and "0:cb:x" not in saved["handled"]
    assert TOKEN.split(":")[1] not in json.dumps(saved)


def test_an_offset_file_from_before_reads_when_it_was_written(calendar: Calendar) -> None:
    """Files written before ``seen_at`` was kept were saved only when updates came."""
    path = offset_file(TOKEN)
    path.parent.mkdir(parents=True)
    written = clock.iso_seconds(calendar.now() - 2 * DAY)
    path.write_text(json.dumps({"bot": "464646", "offset": 1201, "updated_at": written}))
    assert OffsetFile(TOKEN).load() == Position(1201, clock.parse_iso(written))
