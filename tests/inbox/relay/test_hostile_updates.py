"""Hostile updates from the allowed user decide nothing they should not, and never stall
the batch: forged indexes, non-ASCII digits, another request's id on a block's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.channels.http import MAX_RETRY_AFTER, capped_wait
from loopkit.channels.telegram_api import BotApi, BotApiError
from loopkit.config import Config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator

from fakeserver import FakeServer, Reply
from helpers import relay_for

TOKEN = "434343:AAHostileTestTokenNotARealOne_xyz"
CHAT = 4343
ANA = {"id": 111, "first_name": "Ana"}


def make_config(ws: Path, server: FakeServer) -> Config:
    return config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT), "LOOPKIT_HITL_TELEGRAM_API": server.url,
    })  # fmt: skip


def block(config: Config, *choices: str) -> tuple[str, int]:
    escalation = Escalation(question="Go on?", context="c", attempted=["a"],
                            choices=[parse_choice(c) for c in choices])  # fmt: skip
    result = Escalator(config).escalate(escalation)
    return result.request.request_id, int(result.request.delivery[-1].message_id)


def tap(server: FakeServer, data: str, message_id: int) -> None:
    message = {"message_id": message_id, "chat": {"id": CHAT}, "text": "five lines"}
    server.push_update(callback_query={"id": f"cb-{data}", "from": ANA, "message": message,
                                       "data": data})  # fmt: skip


def status(ws: Path, request_id: str) -> str:
    return str(json.loads((ws / "requests" / f"{request_id}.json").read_text())["status"])


@pytest.mark.parametrize(
    "index", ["2", "²", "9999999999999999999", "-1", "0x1", "", "01", "0001", "0010"]
)
def test_a_forged_index_is_an_unknown_button(ws: Path, server: FakeServer, index: str) -> None:
    config = make_config(ws, server)
    request_id, message_id = block(config, "Yes — go", "No — wait")  # two choices: 0 and 1
    tap(server, f"{request_id}:{index}", message_id)
    tap(server, f"{request_id}:1", message_id)  # the next, real answer is not stuck behind it
    relay_for(config, poll_timeout=0).poll_once()
    acks = [c.body["text"] for c in server.calls("/answerCallbackQuery")]
    assert acks[0] == "unknown button"
    record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert record["resolution"]["chosen_option"] == "no"


def test_another_request_s_id_on_a_block_s_message_decides_nothing(
    ws: Path, server: FakeServer
) -> None:
    config = make_config(ws, server)
    first, first_message = block(config, "Yes — go")
    (ws / "BLOCKED.md").unlink()
    second, _ = block(config, "Yes — go")
    tap(server, f"{second}:0", first_message)  # the second's id, on the first's message
    relay_for(config, poll_timeout=0).poll_once()
    assert status(ws, second) == "open" and status(ws, first) == "open"
    assert server.calls("/answerCallbackQuery")[0].body["text"] == "unknown button"


@pytest.mark.parametrize(
    ("given", "expected"),
    [(3, 3.0), (1e12, MAX_RETRY_AFTER), (-5, 0.0), (float("nan"), None), (float("inf"), None),
     ("3", None), (True, None)],
)  # fmt: skip
def test_server_waits_are_capped(given: object, expected: float | None) -> None:
    assert capped_wait(given) == expected


def test_a_huge_retry_after_never_overflows_the_poller(server: FakeServer) -> None:
    body = {"ok": False, "error_code": 429, "description": "slow down",
            "parameters": {"retry_after": 1e12}}  # fmt: skip
    server.queue("getUpdates", Reply(429, body))
    settings = make_config(Path("."), server).channels
    with pytest.raises(BotApiError) as caught:
        BotApi(settings).call("getUpdates", {"timeout": 0})
    assert caught.value.kind == "rate" and caught.value.wait == MAX_RETRY_AFTER
