"""Telegram answers against a fake Bot API on 127.0.0.1: taps, replies, who, exactly once."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit import log
from loopkit.config import Config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.inbox.relay.poller import UpdatePoller

from fakeserver import FakeServer, Reply
from helpers import offset_file, relay_for, wait_until

TOKEN = "424242:AAUpdatesTestTokenNotARealOne_xyz"
CHAT = 4242
ANA = {"id": 111, "first_name": "Ana"}
BOB = {"id": 222, "first_name": "Bob"}


def make_config(ws: Path, server: FakeServer, allowed: str = "") -> Config:
    env = {
        "LOOPKIT_HITL_CHANNEL": "telegram",
        "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT),
        "LOOPKIT_HITL_TELEGRAM_API": server.url,
    }
    if allowed:
        env["LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS"] = allowed
    return config_mod.load(ws, env)


def block(config: Config) -> tuple[str, int]:
    """Escalate (a real sendMessage to the fake server); returns request id and message id."""
    escalation = Escalation(
        question="Verify failed 3 times: how do I go on?",
        context="task 'Round prices'",
        attempted=["iterations 1-3"],
        choices=[parse_choice(c) for c in ("Retry with a hint", "Skip the task", "Abort")],
    )
    result = Escalator(config).escalate(escalation)
    message_id = result.request.delivery[-1].message_id
    assert isinstance(message_id, int)
    return result.request.request_id, message_id


def tap(server: FakeServer, request_id: str, index: int, message_id: int, **over: Any) -> int:
    query = {
        "id": f"cb{index}",
        "from": over.get("user", ANA),
        "message": {
            "message_id": message_id,
            "chat": {"id": over.get("chat", CHAT), "type": "private"},
            "text": "[loopkit] blocked in ws on ...",
        },
        "data": f"{request_id}:{index}",
    }
    return server.push_update(callback_query=query)


def text_reply(server: FakeServer, text: str, reply_to: int, **over: Any) -> int:
    message = {
        "message_id": 900,
        "from": over.get("user", ANA),
        "chat": {"id": over.get("chat", CHAT), "type": "private"},
        "text": text,
        "reply_to_message": {"message_id": reply_to, "text": "[loopkit] blocked ..."},
    }
    return server.push_update(message=message)


def load(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture
def ws_config(ws: Path, server: FakeServer) -> Config:
    return make_config(ws, server)


def test_a_tap_answers_acknowledges_and_edits(
    ws: Path, server: FakeServer, ws_config: Config
) -> None:
    request_id, message_id = block(ws_config)
    update_id = tap(server, request_id, 1, message_id)
    poller = relay_for(ws_config, poll_timeout=0)
    assert poller.poll_once() == 1
    record = load(ws, request_id)
    assert record["status"] == "resolved"
    resolution = record["resolution"]
    assert resolution["chosen_option"] == "skip-the-task" and resolution["via"] == "telegram"
    assert resolution["by"] == "111 (Ana)" and resolution["by_id"] == 111
    [ack] = server.calls("/answerCallbackQuery")
    assert ack.body["callback_query_id"] == "cb1"
    assert ack.body["text"].startswith("Resolved: Skip the task — by Ana, ")
    [edit] = server.calls("/editMessageText")
    assert edit.body["message_id"] == message_id and edit.body["chat_id"] == str(CHAT)
    # The message ends with the outcome and how the tap was read; the tap's answer says both.
    assert edit.body["text"].endswith("\n→ B) Skip the task (letter B)")
    assert " ".join(edit.body["text"].split("\n\n")[-1].split()) == ack.body["text"]
    assert edit.body["reply_markup"] == {"inline_keyboard": []}
    # The offset moved past the handled update, and is asked for next time.
    poller.poll_once()
    assert server.offsets()[-1] == update_id + 1


@pytest.mark.parametrize(
    ("allowed", "who", "chat"),
    [("111", BOB, CHAT), ("", ANA, 999), ("111,333", BOB, 999)],
)
def test_taps_from_strangers_decide_nothing(
    ws: Path, server: FakeServer, allowed: str, who: dict[str, Any], chat: int
) -> None:
    config = make_config(ws, server, allowed)
    request_id, message_id = block(config)
    tap(server, request_id, 2, message_id, user=who, chat=chat)
    relay_for(config, poll_timeout=0).poll_once()
    assert load(ws, request_id)["status"] == "open"
    [ack] = server.calls("/answerCallbackQuery")
    assert ack.body["text"] == "not allowed"
    assert server.calls("/editMessageText") == []


def test_an_allowed_user_may_answer(ws: Path, server: FakeServer) -> None:
    config = make_config(ws, server, "333, 111")
    request_id, message_id = block(config)
    tap(server, request_id, 0, message_id)
    relay_for(config, poll_timeout=0).poll_once()
    assert load(ws, request_id)["resolution"]["chosen_option"] == "retry-with-a-hint"


def test_a_text_reply_to_the_block_message(ws: Path, server: FakeServer, ws_config: Config) -> None:
    request_id, message_id = block(ws_config)
    text_reply(server, "Use banker's rounding", reply_to=message_id + 50)  # another message
    text_reply(server, "hello", reply_to=message_id, user=BOB, chat=999)  # a stranger
    poller = relay_for(ws_config, poll_timeout=0)
    assert poller.poll_once() == 2
    assert load(ws, request_id)["status"] == "open"
    text_reply(server, "Use banker's rounding", reply_to=message_id)
    poller.poll_once()
    resolution = load(ws, request_id)["resolution"]
    assert resolution["free_text"] == "Use banker's rounding"
    assert resolution["parsed_decision"] == "Use banker's rounding"
    [edit] = server.calls("/editMessageText")
    assert "Resolved: Use banker's rounding — by Ana" in edit.body["text"]


def test_a_text_reply_to_an_answered_block_is_told_so(
    ws: Path, server: FakeServer, ws_config: Config
) -> None:
    request_id, message_id = block(ws_config)
    tap(server, request_id, 1, message_id)
    text_reply(server, "Abort it", reply_to=message_id, user=BOB)
    relay_for(ws_config, poll_timeout=0).poll_once()
    assert load(ws, request_id)["resolution"]["chosen_option"] == "skip-the-task"
    [told] = server.calls("/sendMessage")[1:]  # after the block's own message
    assert "already resolved" in told.body["text"]
    assert told.body["reply_parameters"]["message_id"] == 900  # the late reply's own


def test_two_taps_one_decision(ws: Path, server: FakeServer, ws_config: Config) -> None:
    request_id, message_id = block(ws_config)
    tap(server, request_id, 1, message_id)
    tap(server, request_id, 2, message_id, user=BOB)
    relay_for(ws_config, poll_timeout=0).poll_once()
    assert load(ws, request_id)["resolution"]["chosen_option"] == "skip-the-task"
    first, second = server.calls("/answerCallbackQuery")
    assert first.body["text"].startswith("Resolved: Skip the task")
    assert "already resolved" in second.body["text"]
    assert len(server.calls("/editMessageText")) == 1


def test_a_restart_never_replays_and_a_lost_offset_changes_nothing(
    ws: Path, server: FakeServer, ws_config: Config
) -> None:
    request_id, message_id = block(ws_config)
    update_id = tap(server, request_id, 1, message_id)
    relay_for(ws_config, poll_timeout=0).poll_once()
    before = (ws / "requests" / f"{request_id}.json").read_text()
    # A crash between recording the answer and saving the offset (Telegram has not been
    # told the new offset yet, so it serves the tap again): it changes nothing.
    offset_file(TOKEN).unlink()
    assert relay_for(ws_config, poll_timeout=0).poll_once() == 1
    assert (ws / "requests" / f"{request_id}.json").read_text() == before
    assert "already resolved" in server.calls("/answerCallbackQuery")[-1].body["text"]
    # A new process: it asks from the saved offset, so the old tap is not even fetched.
    restarted = relay_for(ws_config, poll_timeout=0)
    assert restarted.poll_once() == 0
    assert server.offsets()[-1] == update_id + 1


def test_an_answer_sent_while_down_is_applied_on_start(
    ws: Path, server: FakeServer, ws_config: Config
) -> None:
    request_id, message_id = block(ws_config)
    relay_for(ws_config, poll_timeout=0).poll_once()  # nothing yet; offset unknown
    tap(server, request_id, 2, message_id)  # arrives while no poller runs
    relay_for(ws_config, poll_timeout=0).poll_once()
    assert load(ws, request_id)["resolution"]["chosen_option"] == "abort"


def test_the_offset_file_holds_no_secret(ws: Path, server: FakeServer, ws_config: Config) -> None:
    request_id, message_id = block(ws_config)
    tap(server, request_id, 0, message_id)
    relay_for(ws_config, poll_timeout=0).poll_once()
    saved = offset_file(TOKEN).read_text()
    assert TOKEN not in saved and TOKEN.split(":")[1] not in saved
    assert json.loads(saved)["bot"] == "424242"


class Waits:
    def __init__(self, poller: UpdatePoller, stop_after: int) -> None:
        self.seen: list[float] = []
        self.poller = poller
        self.stop_after = stop_after

    def __call__(self, seconds: float) -> bool:
        self.seen.append(seconds)
        if len(self.seen) >= self.stop_after:
            self.poller.stopped.set()
            return True
        return False


def run_loop(poller: UpdatePoller, waits: Waits) -> None:
    poller._wait = waits
    poller.active.set()
    thread = threading.Thread(target=poller._run, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive()


def test_409_conflict_warns_once_and_backs_off(
    ws: Path, server: FakeServer, ws_config: Config
) -> None:
    conflict = {"ok": False, "error_code": 409, "description": "Conflict: terminated by other"}
    server.queue("/getUpdates", *[Reply(409, conflict)] * 4)
    poller = relay_for(ws_config, poll_timeout=0)
    waits = Waits(poller, stop_after=4)
    with log.capture() as logs:
        run_loop(poller, waits)
    assert waits.seen == [1.0, 2.0, 4.0, 8.0]
    warnings = [e for e in logs if e["event"] == "telegram_poll_failed"]
    assert len(warnings) == 1 and "another process is polling this bot" in warnings[0]["msg"]
    assert TOKEN not in json.dumps(logs)


def test_429_honours_retry_after(ws: Path, server: FakeServer, ws_config: Config) -> None:
    limited = {"ok": False, "error_code": 429, "parameters": {"retry_after": 7}}
    server.queue("/getUpdates", Reply(429, limited))
    poller = relay_for(ws_config, poll_timeout=0)
    waits = Waits(poller, stop_after=1)
    run_loop(poller, waits)
    assert waits.seen == [7.0]


def test_network_loss_backs_off_to_60_seconds(ws: Path, ws_config: Config) -> None:
    down = config_mod.load(
        ws,
        {
            "LOOPKIT_HITL_CHANNEL": "telegram",
            "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
            "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT),
            "LOOPKIT_HITL_TELEGRAM_API": "http://127.0.0.1:9",  # nothing listens there
        },
    )
    poller = relay_for(down, poll_timeout=0)
    waits = Waits(poller, stop_after=8)
    with log.capture() as logs:
        run_loop(poller, waits)
    assert waits.seen == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert len([e for e in logs if e["event"] == "telegram_poll_failed"]) == 1


def test_an_empty_answer_that_does_not_long_poll_never_spins(
    ws: Path, server: FakeServer, ws_config: Config
) -> None:
    server.queue("/getUpdates", Reply(200, {"ok": True, "result": []}))
    poller = relay_for(ws_config, poll_timeout=0)
    waits = Waits(poller, stop_after=1)
    run_loop(poller, waits)
    assert waits.seen == [1.0]
    wait_until(lambda: len(server.calls("/getUpdates")) == 1)
