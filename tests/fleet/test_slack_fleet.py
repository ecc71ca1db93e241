"""The Slack app in a fleet (SPEC §21): one Socket Mode connection per fleet — the app's
lease is the fleet's advisory lock — and a click on one machine's block, received by the
other machine's connection, answers it once. In process, against the real PostgreSQL server
the tests start and the fake Slack (``tests/fakeslack.py``). "Machines" are LOOPKIT_HOMEs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from loopkit import config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.inbox.relay.slack_socket import SlackRelay
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakeslack import FakeSlack
from helpers import wait_until


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    try:
        yield fake
    finally:
        fake.close()


def machine(root: Path, name: str, dsn: str, slack: FakeSlack,
            monkeypatch: pytest.MonkeyPatch) -> tuple[Any, RequestStore, Hubs]:  # fmt: skip
    monkeypatch.setenv("LOOPKIT_HOME", str(root / f"home-{name}"))
    ws = root / f"ws-{name}"
    ws.mkdir()
    (ws / "loopkit.toml").write_text(
        f'[fleet]\ndsn = "{dsn}"\n[escalation]\nchannel = "slack"\nslack_mode = "socket"\n'
    )
    conf = config.load(ws, {k: v for k, v in slack.env().items() if k != "LOOPKIT_HITL_CHANNEL"})
    hubs = Hubs(environ={})
    return conf, RequestStore(Workspace.of(conf), hub=hubs.for_config(conf)), hubs


def test_one_connection_per_fleet_and_a_click_lands_on_the_other_machine(
    tmp_path: Path, dsn: str, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[SlackRelay] = []
    hubs_made: list[Hubs] = []
    try:
        relays, blocks = [], []
        for name in ("a", "b"):
            conf, store, hubs = machine(tmp_path, name, dsn, slack, monkeypatch)
            hubs_made.append(hubs)
            escalation = Escalation("Ship it?", "checkout", [], [parse_choice("Yes"),
                                                                 parse_choice("No")])  # fmt: skip
            record = Escalator(conf, store=store).escalate(escalation).request
            blocks.append((conf, record.request_id, str(record.delivery[-1].message_id)))
            stores = Stores(hubs.for_config)
            stores.add(conf, store)
            relay = SlackRelay.relay(conf.channels, hubs=hubs, stores=stores, here=store)
            relay.active.set()
            relay.start()
            made.append(relay)
            relays.append(relay)
        wait_until(lambda: any(r.connected.is_set() for r in relays), 10, "one connects")
        holder = next(r for r in relays if r.connected.is_set())
        # (the client may see its handshake done before the fake's handler registers the link)
        wait_until(lambda: slack.open_links() >= 1, 10, "the link at the fake")
        assert slack.connects == 1 and slack.open_links() == 1
        # A click on the other machine's block reaches it through the holder's connection.
        other = blocks[1] if holder is relays[0] else blocks[0]
        conf, request_id, ref = other
        slack.click("U0ANA", ref.split(":", 1)[1], 1)

        def answered() -> Any:
            # Recorded in the fleet (its owner applies it when it follows the answers).
            with psycopg.connect(dsn) as conn:
                found = conn.execute(
                    "SELECT status, answer FROM loopkit_requests WHERE request_id = %s",
                    (request_id,),
                ).fetchone()
            return found if found and found[0] == "resolved" else None

        _, answer = wait_until(answered, 10, "the other machine's block answered")
        resolution = answer["record"]["resolution"]
        assert resolution["via"] == "slack" and resolution["by_id"] == "U0ANA"
        assert slack.connects == 1
    finally:
        for relay in made:
            relay.stop()
        for hubs in hubs_made:
            hubs.close()
