"""A partition tells the truth (SPEC §28): an answer given on a machine that cannot reach the
fleet's database is recorded there and said to stand only if nobody answered elsewhere
(exit 75); once the database is back, the human whose answer lost is told so on the
channel they answered from."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from loopkit import config as config_mod
from loopkit.answering import answer
from loopkit.fleet.follow import Follower
from loopkit.requests.answer import apply_reply
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakeserver import FakeServer
from helpers import Daemon, setup, wait_until
from machines import Machine

CUT_OFF = "postgresql://loopkit@127.0.0.1:9/loopkit?connect_timeout=1"  # nothing listens


def test_a_reply_on_a_machine_cut_off_says_it_may_not_stand(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    setup(a.ws, "max_verify_failures = 1")
    with Daemon(a.ws, env=a.env) as loop:
        loop.wait_state(status="blocked")
        request_id = str(loop.state()["open_request"])
    # b reaches the database and answers first; a, cut off from it, answers too.
    first = b.lk("reply", "--request-id", request_id, "--reply", "B", "--by", "bo")
    assert first.returncode == 0, first.stderr
    a.env["LOOPKIT_FLEET_DSN"] = CUT_OFF
    second = a.lk("reply", "--request-id", request_id, "--reply", "A", "--by", "ana")
    assert second.returncode == 75, second.stderr
    assert "recorded here; the fleet is unreachable: it stands only if nobody answered " \
           "elsewhere" in second.stderr  # fmt: skip
    assert json.loads(second.stdout)["chosen_option"] is not None  # recorded here


class _NoFleet:
    """The follower's hub, for a follower applied by hand: nothing to mirror."""

    machine = "a"

    def mirror_applied(self, *_: Any) -> None:
        return None


def test_the_human_whose_answer_lost_is_told_on_their_channel(
    tmp_path: Path, server: FakeServer, monkeypatch: Any
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.setenv("LOOPKIT_HITL_CHANNEL", "telegram")
    monkeypatch.setenv("LOOPKIT_HITL_TELEGRAM_TOKEN", "123:AAtelegramTokenForThePartitionTest")
    monkeypatch.setenv("LOOPKIT_HITL_TELEGRAM_CHAT", "42")
    monkeypatch.setenv("LOOPKIT_HITL_TELEGRAM_API", server.url)
    (ws / "loopkit.toml").write_text("[loop]\n")
    config = config_mod.load(ws)
    store = RequestStore(Workspace.of(config))
    from loopkit.escalation.blockfile import Escalation, parse_choice
    from loopkit.escalation.escalator import Escalator

    asked = Escalator(config, store=store, channel_factory=lambda *_: _Silent()).escalate(
        Escalation("Which flow?", "checkout", ["read"], [parse_choice("Keep — as is"),
                   parse_choice("Migrate — to v2")])
    ).request  # fmt: skip
    remote = store.load(asked.request_id)
    apply_reply(remote, "B", by="bo", via="cli")  # on another machine, first
    remote.resolution = remote.resolution.with_fields({"resolved_at": "2026-12-04T10:00:00Z"})
    # here, cut off, a tap a minute later
    answer(store, asked.request_id, "A", by="42 (Ana)", via="telegram")
    local = store.load(asked.request_id)
    assert local.resolution is not None and local.resolution.via == "telegram"
    stores = Stores()
    stores.add(config, store)
    follower = Follower(_NoFleet(), stores, threading.Event(), None)  # type: ignore[arg-type]
    follower.apply(str(ws), asked.request_id, {"record": remote.to_dict()})
    told = wait_until(lambda: [c for c in server.calls("/sendMessage")
                               if "was not used" in c.body.get("text", "")],
                      what="the loser told on Telegram")  # fmt: skip
    assert "“A”" in told[0].body["text"] and "bo answered first" in told[0].body["text"]
    assert store.load(asked.request_id).resolution.by == "bo"  # the first answer stands


class _Silent:
    def send(self, *_: Any) -> Any:
        from loopkit.channels import Outcome

        return Outcome(ok=True, status=200, message_id=1)

    def problems(self) -> list[str]:
        return []
