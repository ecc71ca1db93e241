"""Steering loops from Telegram, through the fake Bot API (SPEC §22): ``/loops``, ``/pause``,
``/resume``, ``/stop`` from the allowed user only; an unknown repo is answered with the
list; ``@repo …`` and a reply to the bot's message about a loop go to its agent: here, with
no loopkit running, as notes for its next run (its running turn: ``tests/agents``).
With a fleet (a fake one here; a real one in ``tests/fleet``), other machines' loops are
listed and steered through it, and a repo name two machines share needs ``machine:repo``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.fleet import LoopRows
from loopkit.home import Registry
from loopkit.liveness import start_ticks
from loopkit.requests.hub import Remote

from fakeserver import FakeServer
from helpers import relay_for

TOKEN = "515151:AASteerTestTokenNotARealOne_xyz"
CHAT = 5151
ANA = {"id": 111, "first_name": "Ana"}
STRANGER = {"id": 999, "first_name": "Mallory"}


def make_config(ws: Path, server: FakeServer) -> Config:
    return config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT), "LOOPKIT_HITL_TELEGRAM_API": server.url,
        "LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS": "111",
    })  # fmt: skip


def running_loop(tmp_path: Path, name: str) -> Path:
    """A registered workspace whose supervisor runs: this test process plays it."""
    ws = tmp_path / name
    (ws / ".loopkit").mkdir(parents=True)
    state = {"status": "running", "pid": os.getpid(), "pid_start": start_ticks(os.getpid()),
             "iteration": 4, "task": "add the price endpoint"}  # fmt: skip
    (ws / ".loopkit" / "state.json").write_text(json.dumps(state))
    Registry().register(ws, name)
    return ws


def say(server: FakeServer, text: str, sender: dict[str, object] = ANA,
        reply_to: int | None = None) -> None:  # fmt: skip
    message: dict[str, object] = {"message_id": 900 + len(server.calls("/getUpdates")),
                                  "chat": {"id": CHAT}, "from": sender, "text": text}  # fmt: skip
    if reply_to is not None:
        message["reply_to_message"] = {"message_id": reply_to, "chat": {"id": CHAT}}
    server.push_update(message=message)


def told(server: FakeServer) -> list[str]:
    return [str(call.body["text"]) for call in server.calls("/sendMessage")]


def order(ws: Path) -> dict[str, object] | None:
    path = ws / ".loopkit" / "control" / "steer.json"
    return json.loads(path.read_text()) if path.exists() else None


def notes(ws: Path) -> list[dict[str, object]]:
    folder = ws / ".loopkit" / "control" / "notes"
    return (
        [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        if folder.exists()
        else []
    )


def test_commands_from_the_allowed_user_steer_a_stranger_s_do_nothing(
    tmp_path: Path, server: FakeServer
) -> None:
    shop = running_loop(tmp_path, "shop")
    running_loop(tmp_path, "billing")
    relay = relay_for(make_config(shop, server), poll_timeout=0)

    say(server, "/stop shop", sender=STRANGER)
    relay.poll_once()
    assert order(shop) is None and told(server) == []  # nothing done, nothing said

    say(server, "/loops")
    relay.poll_once()
    [listing] = told(server)
    assert "- shop: running, iteration 4" in listing and "- billing: running" in listing

    say(server, "/pause nosuch")
    relay.poll_once()
    assert told(server)[-1].startswith("No single loop named 'nosuch'.\nLoops:\n- shop")
    assert order(shop) is None

    say(server, "/pause@loopkit_bot shop")
    relay.poll_once()
    assert told(server)[-1].startswith("shop: paused (pause by 111 (Ana) via telegram")
    paused = order(shop)
    assert paused is not None
    assert (paused["command"], paused["by"], paused["via"]) == ("pause", "111 (Ana)", "telegram")

    # A reply to the bot's message about shop is a note for shop's next agent run.
    about_shop = server.calls("/sendMessage")[-1]
    message_id = 100 + len(server.calls("/sendMessage"))  # the fake numbers them 101, 102 …
    assert about_shop.body["text"].startswith("shop: paused")
    say(server, "use the staging database", reply_to=message_id)
    say(server, "@billing keep the invoices table")
    say(server, "@shop", sender=STRANGER)  # a stranger's note is no note
    relay.poll_once()
    assert [n["text"] for n in notes(shop)] == ["use the staging database"]
    billing = tmp_path / "billing"
    assert [n["text"] for n in notes(billing)] == ["keep the invoices table"]
    assert notes(billing)[0]["via"] == "telegram"

    say(server, "/stop shop")
    relay.poll_once()
    stopped = order(shop)
    assert stopped is not None and stopped["command"] == "stop"
    assert told(server)[-1].startswith("shop: stopping (stop by 111 (Ana) via telegram")


class Fleet:
    """Another machine, build-2, with a running ``shop`` and a paused ``docs``."""

    def __init__(self) -> None:
        self.given: list[tuple[Any, ...]] = []

    def remote_open(self) -> list[Remote]:
        return []

    def remote_loop_rows(self) -> LoopRows:
        base = {"machine": "build-2-1a2b3c4d", "pid": 77, "iteration": 9, "task": None,
                "since": None, "last_verify": None, "question": None, "request_id": None,
                "spend_usd": None, "paused_by": None, "guidance_pending": 0, "problem": None,
                "heard_at": None, "stale": False, "heard_seconds": 1.0}  # fmt: skip
        return LoopRows([
            {**base, "workspace": "/srv/shop", "repo": "shop", "state": "running"},
            {**base, "workspace": "/srv/docs", "repo": "docs", "state": "paused",
             "paused_by": "pause by ana via cli at 2026-12-03 21:04:58"},
        ])  # fmt: skip

    def steer_remote(
        self, machine: str, workspace: str, command: str, note: str | None, *, by: str, via: str
    ) -> None:
        self.given.append((machine, workspace, command, note, by, via))


def test_other_machines_loops_are_listed_and_steered_through_the_fleet(
    tmp_path: Path, server: FakeServer
) -> None:
    shop = running_loop(tmp_path, "shop")  # this machine has a shop too
    relay = relay_for(make_config(shop, server), poll_timeout=0)
    fleet = Fleet()
    relay.router.loop_commands.fleet = fleet

    say(server, "/loops")
    relay.poll_once()
    [listing] = told(server)
    from loopkit.home import machine

    assert f"- {machine()}:shop: running, iteration 4" in listing
    assert "- build-2-1a2b3c4d:shop: running, iteration 9" in listing
    assert "- docs (on build-2-1a2b3c4d): paused, iteration 9" in listing

    say(server, "/stop shop")  # two machines have a shop: which one?
    relay.poll_once()
    assert (
        told(server)[-1].startswith("'shop' names loops on 2 machines; say which: ")
        and "build-2-1a2b3c4d:shop" in told(server)[-1]
    )
    assert order(shop) is None and fleet.given == []

    say(server, "/resume docs")
    say(server, "/stop build-2:shop")
    say(server, "@docs rebuild the index first")
    say(server, "@shop a note for which shop?")
    say(server, "/stop docs", sender=STRANGER)
    relay.poll_once()
    assert fleet.given == [
        ("build-2-1a2b3c4d", "/srv/docs", "resume", None, "111 (Ana)", "telegram"),
        ("build-2-1a2b3c4d", "/srv/shop", "stop", None, "111 (Ana)", "telegram"),
        ("build-2-1a2b3c4d", "/srv/docs", "note", "rebuild the index first", "111 (Ana)",
         "telegram"),
    ]  # fmt: skip
    said = told(server)[-4:]
    assert said[0].startswith("docs on build-2-1a2b3c4d: resume sent (by 111 (Ana) via telegram)")
    assert said[1].startswith("shop on build-2-1a2b3c4d: stop sent")
    assert said[2] == ("docs on build-2-1a2b3c4d: noted for its next agent run (a message "
                       "reaches a running turn only from its own machine)")  # fmt: skip
    assert said[3].startswith("'shop' names loops on 2 machines")  # no note was taken
    assert notes(shop) == [] and order(shop) is None

    # A reply to the bot's message about another machine's loop is a note for that loop.
    about_docs = 100 + len(server.calls("/sendMessage")) - 1  # "docs … note sent"
    say(server, "and the sitemap", reply_to=about_docs)
    relay.poll_once()
    assert fleet.given[-1][2:4] == ("note", "and the sitemap")


def test_the_list_of_many_loops_fits_one_telegram_message() -> None:
    from loopkit.inbox.relay.commands import _listing
    from loopkit.loops import Loop

    many = [
        Loop(key=str(n), repo=f"service-number-{n:03d}", workspace=f"/srv/{n}",
             machine="build-2-1a2b3c4d", state="running", pid=n, iteration=n, task=None,
             since=None, last_verify=None, question="Drop the legacy table? " * 3,
             request_id=None, spend_usd=None, paused_by=None, guidance_pending=0)
        for n in range(150)
    ]  # fmt: skip
    text = _listing(many)
    assert len(text) <= 4096
    assert "more: `loopkit ps` or the inbox's Loops page lists all" in text
    assert text.startswith("Loops:\n- service-number-000") and text.endswith("<message>")
    assert len(_listing(many[:3]).splitlines()) == 5  # a few: every one, nothing cut


def test_loops_shows_what_each_loop_spent() -> None:
    """``/loops`` shows the spend the supervisor recorded, as ``ps`` and the Loops page do."""
    from loopkit.inbox.relay.commands import _listing
    from loopkit.loops import Loop

    spent, free = (
        Loop(key=key, repo=key, workspace=f"/srv/{key}", machine=None, state="running", pid=1,
             iteration=4, task=None, since=None, last_verify=None, question=None,
             request_id=None, spend_usd=spend, paused_by=None, guidance_pending=0)
        for key, spend in (("shop", 1.2), ("docs", None))
    )  # fmt: skip
    lines = _listing([spent, free]).splitlines()
    assert lines[1] == "- shop: running, iteration 4 · $1.20 spent"
    assert lines[2] == "- docs: running, iteration 4"
