"""People on Telegram (SPEC §29): each is asked in their own chat with the bot, a tap there
answers under their name, and every person's message is edited to say who answered and
via what; a chat of nobody listed decides nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator

from fakeserver import FakeServer
from helpers import relay_for

TOKEN = "424242:AAPeopleTestTokenNotARealOne_xyz"
ANA_CHAT, BEN_CHAT, STRANGER = 111, 222, 333


def team(ws: Path, server: FakeServer) -> Config:
    (ws / "loopkit.toml").write_text(
        f'[[escalation.people]]\nname = "Ana"\nchannel = "telegram"\naddress = "{ANA_CHAT}"\n'
        f'[[escalation.people]]\nname = "Ben"\nchannel = "telegram"\naddress = "{BEN_CHAT}"\n'
    )
    env = {"LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN, "LOOPKIT_HITL_TELEGRAM_API": server.url}
    return config_mod.load(ws, env)


def block(config: Config) -> str:
    choices = [parse_choice("Keep — as is"), parse_choice("Migrate — to v2")]
    escalation = Escalation("Which flow?", "checkout", ["read the spec"], choices)
    return Escalator(config).escalate(escalation).request.request_id


def tap(server: FakeServer, request_id: str, index: int, message_id: int, chat: int) -> None:
    user = {"id": chat, "first_name": {ANA_CHAT: "Ana", BEN_CHAT: "Ben"}.get(chat, "Eve")}
    server.push_update(
        callback_query={
            "id": f"cb-{chat}", "from": user, "data": f"{request_id}:{index}",
            "message": {"message_id": message_id, "chat": {"id": chat, "type": "private"},
                        "text": "[loopkit] blocked …"},
        }
    )  # fmt: skip


def record(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def test_each_person_is_asked_in_their_chat_and_told_who_answered(
    ws: Path, server: FakeServer
) -> None:
    config = team(ws, server)
    rid = block(config)
    sent = {call.body["chat_id"]: call for call in server.calls("/sendMessage")}
    assert set(sent) == {str(ANA_CHAT), str(BEN_CHAT)}
    assert "(also asked: Ana)" in sent[str(BEN_CHAT)].body["text"]
    ids = {entry["person"]: entry["message_id"] for entry in record(ws, rid)["delivery"]}
    relay = relay_for(config, poll_timeout=0)
    tap(server, rid, 0, ids["Ana"], STRANGER)  # a chat of nobody listed
    tap(server, rid, 1, ids["Ana"], BEN_CHAT)  # Ben's chat, Ana's message: a forged button
    relay.poll_once()
    assert record(ws, rid)["status"] == "open"
    acks = [c.body["text"] for c in server.calls("/answerCallbackQuery")]
    assert acks == ["not allowed", "unknown button"]
    tap(server, rid, 1, ids["Ben"], BEN_CHAT)
    relay.poll_once()
    resolution = record(ws, rid)["resolution"]
    assert (resolution["by"], resolution["via"], resolution["by_name"]) == (
        "Ben", "telegram", "Ben"
    )  # fmt: skip
    edits = {c.body["chat_id"]: c.body["text"] for c in server.calls("/editMessageText")}
    assert set(edits) == {str(ANA_CHAT), str(BEN_CHAT)}
    assert "Resolved: Migrate — by Ben, " in edits[str(ANA_CHAT)]
    assert (
        server.calls("/answerCallbackQuery")[-1]
        .body["text"]
        .startswith("Resolved: Migrate — by Ben, ")
    )
