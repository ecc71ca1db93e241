"""The bot's lease: one holder at a time, and a stopped poller hands it on (a SIGHUP reload
makes a new poller in the same process: it must not wait behind the old one forever)."""

from __future__ import annotations

from pathlib import Path

from loopkit import config as config_mod
from loopkit.home.bot import BotLease
from loopkit.inbox.relay.poller import UpdatePoller

from fakeserver import FakeServer
from helpers import relay_for, wait_until

TOKEN = "656565:AALeaseTestTokenNotARealOne_xyz"


def poller(ws: Path, server: FakeServer) -> UpdatePoller:
    config = config_mod.load(ws, {
        "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": "1", "LOOPKIT_HITL_TELEGRAM_API": server.url,
    })  # fmt: skip
    made = relay_for(config, poll_timeout=0)
    made.active.set()
    made.start()
    return made


def test_one_holder_and_a_stopped_poller_hands_the_lease_on(ws: Path, server: FakeServer) -> None:
    first = poller(ws, server)
    wait_until(lambda: first.lease.held, 10, "the first poller holding the lease")
    second = poller(ws, server)  # the same process, as after a reload
    wait_until(lambda: server.calls("getUpdates"), 10, "the holder polling")
    assert not second.lease.held  # it waits in flock, it does not poll
    first.stop()
    wait_until(lambda: second.lease.held, 10, "the lease handed on")
    assert not first.lease.held
    second.stop()
    wait_until(lambda: not second.lease.held, 10)
    probe = BotLease(TOKEN.split(":")[0])
    probe.take()  # free again: taken at once
    assert probe.held
    probe.release()


def test_the_fake_bot_api_ends_a_held_poll_with_409(server: FakeServer) -> None:
    """The test double is as strict as Telegram: a second getUpdates ends the first."""
    import threading

    import httpx

    url = f"{server.url}/bot{TOKEN}/getUpdates"
    first: list[int] = []
    waiting = threading.Thread(
        target=lambda: first.append(httpx.post(url, json={"timeout": 10}, timeout=20).status_code)
    )
    waiting.start()
    wait_until(lambda: server.held == 1, 10, "the first poll held")
    second = httpx.post(url, json={"timeout": 0}, timeout=20)
    waiting.join(20)
    assert first == [409] and second.status_code == 200 and server.conflicts == 1
