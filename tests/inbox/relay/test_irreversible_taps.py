"""An irreversible approval takes two taps on Telegram (SPEC section 16), against the strict
fake Bot API: the first tap on Approve records nothing and asks "Approve <the command>? This
cannot be undone." with a confirming button (``<id>:<index>:confirm``) on the block's own
message; only that second tap records the approval, once. A Reject is one tap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.escalation import gate
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakeserver import FakeServer
from helpers import relay_for

TOKEN = "454545:AAIrreversibleTestTokenNotReal_xyz"
CHAT = 4545
ANA = {"id": 111, "first_name": "Ana"}
DROP = ["psql", "postgres://app:hunter2@db/prod", "-c", "DROP TABLE users"]
QUESTION = (
    "Approve `psql 'postgres://app:***@db/prod' -c 'DROP TABLE users'`? This cannot be undone."
)


@pytest.fixture
def config(ws: Path, server: FakeServer) -> Config:
    return config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT), "LOOPKIT_HITL_TELEGRAM_API": server.url,
    })  # fmt: skip


def drop_table(config: Config) -> tuple[str, int]:
    """A gate on DROP TABLE, sent to the fake Bot API: its request id and message id."""
    record = gate.gate(config, DROP, cwd=str(config.workspace),
                       store=RequestStore(Workspace.of(config))).record  # fmt: skip
    message_id = RequestStore(Workspace.of(config)).load(record.request_id).delivery[-1].message_id
    assert isinstance(message_id, int)
    return record.request_id, message_id


def tap(server: FakeServer, data: str, message_id: int, number: int) -> None:
    message = {"message_id": message_id, "chat": {"id": CHAT}, "text": "[loopkit] blocked …"}
    server.push_update(callback_query={"id": f"cb{number}", "from": ANA, "message": message,
                                       "data": data})  # fmt: skip


def load(ws: Path, request_id: str) -> dict[str, Any]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def acks(server: FakeServer) -> list[str]:
    return [str(c.body["text"]) for c in server.calls("/answerCallbackQuery")]


def test_the_first_tap_asks_again_and_only_the_second_approves_once(
    ws: Path, server: FakeServer, config: Config
) -> None:
    rid, message_id = drop_table(config)
    relay = relay_for(config, poll_timeout=0)
    tap(server, f"{rid}:0", message_id, 1)
    relay.poll_once()
    assert load(ws, rid)["status"] == "open" and (ws / "BLOCKED.md").exists()
    assert acks(server)[0].startswith(QUESTION + " Tap “Yes, approve”")
    [edit] = server.calls("/editMessageText")
    assert edit.body["message_id"] == message_id and edit.body["text"].endswith(QUESTION)
    assert "hunter2" not in edit.body["text"] and "hunter2" not in acks(server)[0]
    buttons = [row[0] for row in edit.body["reply_markup"]["inline_keyboard"]]
    assert [b["callback_data"] for b in buttons] == [f"{rid}:0:confirm", f"{rid}:1", f"{rid}:2"]
    assert buttons[0]["text"].startswith("Yes, approve")

    tap(server, f"{rid}:0:confirm", message_id, 2)
    relay.poll_once()
    after = load(ws, rid)
    assert after["status"] == "resolved" and not (ws / "BLOCKED.md").exists()
    resolution = after["resolution"]
    assert (resolution["outcome"], resolution["via"], resolution["by_id"]) == (
        "approved", "telegram", 111,
    )  # fmt: skip
    assert acks(server)[1].startswith("Resolved: Approve — by Ana")
    assert server.calls("/editMessageText")[-1].body["reply_markup"] == {"inline_keyboard": []}

    before = (ws / "requests" / f"{rid}.json").read_text()
    tap(server, f"{rid}:0:confirm", message_id, 3)  # delivered again
    relay.poll_once()
    assert "already resolved" in acks(server)[2]
    assert (ws / "requests" / f"{rid}.json").read_text() == before


def test_a_reject_is_one_tap(ws: Path, server: FakeServer, config: Config) -> None:
    rid, message_id = drop_table(config)
    tap(server, f"{rid}:1", message_id, 1)
    relay_for(config, poll_timeout=0).poll_once()
    after = load(ws, rid)
    assert after["status"] == "resolved" and after["resolution"]["outcome"] == "rejected"


@pytest.mark.parametrize(
    ("data", "ack"),
    [("{rid}:1:confirm", "unknown button"), ("{rid}:0:confirmed", "unknown button"),
     ("{rid}:9:confirm", "unknown button"), ("{rid}:confirm", "unknown button"),
     ("{rid}:0:confirm:0", "unknown request")],
)  # fmt: skip
def test_a_confirmation_loopkit_never_offers_decides_nothing(
    ws: Path, server: FakeServer, config: Config, data: str, ack: str
) -> None:
    rid, message_id = drop_table(config)
    tap(server, data.format(rid=rid), message_id, 1)
    relay_for(config, poll_timeout=0).poll_once()
    assert acks(server) == [ack] and load(ws, rid)["status"] == "open"


def test_a_confirmation_on_a_request_that_needs_none_is_an_unknown_button(
    ws: Path, server: FakeServer, config: Config
) -> None:
    result = Escalator(config).escalate(
        Escalation("Go on?", "c", ["a"], [parse_choice("Yes — go"), parse_choice("No — wait")])
    )
    rid = result.request.request_id
    message_id = int(result.request.delivery[-1].message_id)  # type: ignore[arg-type]
    tap(server, f"{rid}:0:confirm", message_id, 1)
    relay_for(config, poll_timeout=0).poll_once()
    assert acks(server) == ["unknown button"] and load(ws, rid)["status"] == "open"


def test_a_confirmation_on_another_block_s_message_decides_nothing(
    ws: Path, server: FakeServer, config: Config
) -> None:
    rid, message_id = drop_table(config)
    other = gate.gate(config, ["rm", "-rf", "build"], cwd=str(ws),
                      store=RequestStore(Workspace.of(config))).record  # fmt: skip
    tap(server, f"{other.request_id}:0:confirm", message_id, 1)
    relay_for(config, poll_timeout=0).poll_once()
    assert acks(server) == ["unknown button"]
    assert load(ws, rid)["status"] == "open" and load(ws, other.request_id)["status"] == "open"


def test_a_text_reply_that_approves_asks_again_too(
    ws: Path, server: FakeServer, config: Config
) -> None:
    rid, message_id = drop_table(config)
    relay = relay_for(config, poll_timeout=0)
    server.push_update(message={
        "message_id": 900, "from": ANA, "chat": {"id": CHAT, "type": "private"}, "text": "yes",
        "reply_to_message": {"message_id": message_id, "text": "[loopkit] blocked …"},
    })  # fmt: skip
    relay.poll_once()
    assert load(ws, rid)["status"] == "open"
    [told] = [c for c in server.calls("/sendMessage") if c.body.get("reply_parameters")]
    assert told.body["text"].startswith(QUESTION)
    assert told.body["reply_parameters"]["message_id"] == 900
    [edit] = server.calls("/editMessageText")
    assert edit.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"] == f"{rid}:0:confirm"
    tap(server, f"{rid}:0:confirm", message_id, 1)
    relay.poll_once()
    assert load(ws, rid)["resolution"]["outcome"] == "approved"


def test_a_tap_on_a_dismissed_request_says_so_and_changes_nothing(
    ws: Path, server: FakeServer, config: Config
) -> None:
    from loopkit.answering import dismiss
    from loopkit.inbox.relay.senders import outcome_line

    rid, message_id = drop_table(config)
    done = dismiss(RequestStore(Workspace.of(config)), rid, by="ana", via="cli", reason="stale")
    assert outcome_line(done.record).startswith("Dismissed by ana, ")
    assert outcome_line(done.record).endswith(": nobody was to answer it: stale.")
    before = (ws / "requests" / f"{rid}.json").read_text()
    for number, data in enumerate((f"{rid}:0", f"{rid}:1", f"{rid}:0:confirm")):
        tap(server, data, message_id, number)
    relay_for(config, poll_timeout=0).poll_once()
    said = acks(server)
    assert len(said) == 3 and all(
        a.startswith(f"request '{rid}' was dismissed by ana at ") for a in said
    )
    assert (ws / "requests" / f"{rid}.json").read_text() == before


def test_allow_always_here_takes_two_taps_and_writes_its_rule(
    ws: Path, server: FakeServer, config: Config
) -> None:
    """SPEC §30: "Allow always here" on a gate's question, like every P0 approval, is
    recorded only on the second tap — which says what it confirms — and then writes the
    standing rule."""
    from loopkit.escalation import allow
    from loopkit.requests.answer import GATE_OPTIONS

    need = allow.wanted(str(ws), str(ws), ["rm -rf build"], [])
    assert need is not None
    store = RequestStore(Workspace.of(config))

    def make() -> Any:
        record = gate.approval_request(
            config, key="hook:x", prompt="Approve Claude's `rm -rf build`?",
            situation="Command: rm -rf build", policy="the hook", trigger="claude-hook",
            attempted="nothing", binding={"argv": ["rm -rf build"], "command": "rm -rf build",
                                          "cwd": str(ws), "sha256": "x", "tool": "Bash",
                                          "standing": need.to_dict()},
        )  # fmt: skip
        record.options = list(GATE_OPTIONS)
        return record

    record = gate.approval("hook:x", make, escalator=Escalator(config, store=store))
    rid = record.request_id
    message_id = store.load(rid).delivery[-1].message_id
    assert isinstance(message_id, int)
    relay = relay_for(config, poll_timeout=0)
    tap(server, f"{rid}:2", message_id, 1)
    relay.poll_once()
    assert load(ws, rid)["status"] == "open" and allow.load(ws) == []
    assert acks(server)[0].startswith("Allow `rm -rf build` always here?")
    [edit] = server.calls("/editMessageText")
    labels = [row[0]["text"] for row in edit.body["reply_markup"]["inline_keyboard"]]
    assert labels[2] == "Yes, allow always here"
    tap(server, f"{rid}:2:confirm", message_id, 2)
    relay.poll_once()
    after = load(ws, rid)
    assert after["status"] == "resolved" and after["resolution"]["outcome"] == "always"
    (rule,) = allow.load(ws)
    assert rule.command == "rm -rf build" and rule.via == "telegram"
