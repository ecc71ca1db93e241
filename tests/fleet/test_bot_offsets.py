"""SPEC §16 for the fleet: the bot's offset in PostgreSQL is a confirmation too — kept with
when its last update was seen, dropped after six quiet days, lowered with Telegram's ids —
and the updates a poller handled are rows, so whichever machine takes the lease next applies
none of them twice. In process, against the real PostgreSQL server the tests start and the
fake Bot API (``tests/fakeserver.py``) on a clock only the test moves.

"Machines" are LOOPKIT_HOMEs: a PgHub takes its machine's name from the home it was made
under, and each machine keeps its own offset file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from loopkit import config
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs, schema
from loopkit.inbox.relay.poller import UpdatePoller
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakeserver import FakeServer
from helpers import Calendar, Crash, CrashAtSave

TOKEN = "484848:AAFleetOffsetTestTokenNotARealOne_x"
BOT = TOKEN.split(":")[0]
CHAT = 4848
ANA = {"id": 111, "first_name": "Ana"}
DAY = timedelta(days=1)


@pytest.fixture
def calendar(server: FakeServer) -> Calendar:
    moved = Calendar()
    server.now = moved.now
    server.lower_after_quiet = True
    return moved


@pytest.fixture
def made() -> Iterator[list[Hubs]]:
    hubs: list[Hubs] = []
    yield hubs
    for each in hubs:
        each.close()


class Machine:
    """One machine of the fleet: its home, one workspace, its hubs, its relay."""

    def __init__(
        self, root: Path, name: str, dsn: str, server: FakeServer, calendar: Calendar,
        monkeypatch: pytest.MonkeyPatch, made: list[Hubs],
    ) -> None:  # fmt: skip
        self.monkeypatch = monkeypatch
        self.home = root / f"home-{name}"
        self.enter()
        self.ws = root / f"ws-{name}"
        self.ws.mkdir()
        (self.ws / "loopkit.toml").write_text(f'[fleet]\ndsn = "{dsn}"\n')
        self.config = config.load(self.ws, {
            "LOOPKIT_HITL_CHANNEL": "telegram", "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
            "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT), "LOOPKIT_HITL_TELEGRAM_API": server.url,
        })  # fmt: skip
        self.hubs = Hubs(environ={})
        made.append(self.hubs)
        self.store = RequestStore(Workspace.of(self.config), hub=self.hubs.for_config(self.config))
        self.server = server
        self.calendar = calendar

    def enter(self) -> None:
        """Run what follows as this machine: its LOOPKIT_HOME."""
        self.monkeypatch.setenv("LOOPKIT_HOME", str(self.home))

    def block(self, question: str) -> tuple[str, int]:
        self.enter()
        choices = [parse_choice(c) for c in ("Keep", "Migrate", "Abort")]
        escalation = Escalation(question, "checkout", ["read the spec"], choices)
        request = Escalator(self.config, store=self.store).escalate(escalation).request
        return request.request_id, int(request.delivery[-1].message_id)

    def relay(self) -> UpdatePoller:
        self.enter()
        stores = Stores(self.hubs.for_config)
        stores.add(self.config, self.store)
        return UpdatePoller.relay(self.config.channels, hubs=self.hubs, stores=stores,
                                  here=self.store, poll_timeout=0, clock=self.calendar)  # fmt: skip

    def record(self, request_id: str) -> dict[str, Any]:
        data = json.loads((self.ws / "requests" / f"{request_id}.json").read_text())
        assert isinstance(data, dict)
        return data


def tap(server: FakeServer, request_id: str, index: int, message_id: int, query: str) -> int:
    return server.push_update(callback_query={
        "id": query, "from": ANA, "data": f"{request_id}:{index}",
        "message": {"message_id": message_id, "chat": {"id": CHAT}, "text": "five lines"},
    })  # fmt: skip


def row(dsn: str) -> tuple[int, datetime] | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = conn.execute(
            "SELECT next_offset, seen_at FROM loopkit_bot_offsets WHERE bot = %s", (BOT,)
        ).fetchone()
    return (int(found[0]), found[1]) if found else None


def test_the_schema_migrates_from_version_1_keeping_each_offset(pg_server: Any) -> None:
    url = str(pg_server.new_database())
    written = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
    with psycopg.connect(url, autocommit=True) as conn:
        # A fleet made by version 1, with an offset its poller saved.
        conn.execute("CREATE TABLE loopkit_schema (version integer NOT NULL)")
        for statement in schema.MIGRATIONS[0][1]:
            conn.execute(statement)
        conn.execute("INSERT INTO loopkit_schema (version) VALUES (1)")
        conn.execute(
            "INSERT INTO loopkit_bot_offsets (bot, next_offset, updated_at) VALUES (%s, 901, %s)",
            (BOT, written),
        )
        assert schema.init(conn) == (1, schema.LATEST) and schema.version(conn) == schema.LATEST
        assert row(url) == (901, written)  # it was saved when its last update came
        assert schema.init(conn) == (schema.LATEST, schema.LATEST)
        for statement in schema.MIGRATIONS[1][1]:  # each statement idempotent on its own
            conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM loopkit_bot_updates").fetchone() == (0,)
    assert row(url) == (901, written)


def test_a_tap_after_the_ids_restart_lower_lands_with_the_fleets_offset(
    tmp_path: Path, dsn: str, server: FakeServer, calendar: Calendar,
    monkeypatch: pytest.MonkeyPatch, made: list[Hubs],
) -> None:  # fmt: skip
    a = Machine(tmp_path, "a", dsn, server, calendar, monkeypatch, made)
    first, message_id = a.block("Which flow?")
    old = tap(server, first, 1, message_id, "cb-old")
    assert a.relay().poll_once() == 1
    assert row(dsn) == (old + 1, calendar.now())
    calendar.advance(7 * DAY)  # a week without updates: Telegram restarts its ids
    # Machine b holds the lease now; the fleet's offset is what it polls with.
    b = Machine(tmp_path, "b", dsn, server, calendar, monkeypatch, made)
    second, message_id = b.block("Deploy now?")
    new = tap(server, second, 1, message_id, "cb-new")
    assert new < old
    relay = b.relay()
    assert relay.poll_once() == 1 and server.offsets()[-1] is None
    assert b.record(second)["resolution"]["chosen_option"] == "migrate"
    assert row(dsn) == (new + 1, calendar.now())  # lower than before: taken as it is
    third, message_id = b.block("Ship it?")
    tap(server, third, 2, message_id, "cb-next")
    assert relay.poll_once() == 1 and server.offsets()[-1] == new + 1
    assert b.record(third)["resolution"]["chosen_option"] == "abort"


def test_an_update_handled_on_one_machine_is_never_applied_again_on_the_next(
    tmp_path: Path, dsn: str, server: FakeServer, calendar: Calendar,
    monkeypatch: pytest.MonkeyPatch, made: list[Hubs],
) -> None:  # fmt: skip
    a = Machine(tmp_path, "a", dsn, server, calendar, monkeypatch, made)
    b = Machine(tmp_path, "b", dsn, server, calendar, monkeypatch, made)
    first, message_id = a.block("Which flow?")
    # A plain message answers the one open block; a tap on it follows in the same batch.
    server.push_update(message={"message_id": 70, "from": ANA, "chat": {"id": CHAT},
                                "text": "Migrate"})  # fmt: skip
    tap(server, first, 0, message_id, "cb-keep")
    crashing = a.relay()
    crashing.offsets = CrashAtSave(crashing.offsets)
    with pytest.raises(Crash):
        crashing.poll_once()
    assert a.record(first)["resolution"]["chosen_option"] == "migrate"
    # Machine b takes the lease, with one open block of its own and no file of a's.
    second, _ = b.block("Deploy now?")
    calendar.advance(timedelta(minutes=5))
    relay = b.relay()
    assert relay.poll_once() == 2  # Telegram serves both again: never confirmed
    assert b.record(second)["status"] == "open"  # the old message answered nothing new
    assert server.calls("/answerCallbackQuery")[-1].body["text"] == "already answered"
    assert a.record(first)["resolution"]["chosen_option"] == "migrate"
    assert relay.poll_once() == 0
    # Handled updates are forgotten after eight days.
    calendar.advance(8 * DAY)
    server.push_update(message={"message_id": 71, "from": ANA, "chat": {"id": CHAT},
                                "text": "no"})  # fmt: skip
    relay.poll_once()
    with psycopg.connect(dsn, autocommit=True) as conn:
        kept = conn.execute("SELECT update_key FROM loopkit_bot_updates").fetchall()
    assert len(kept) == 1 and kept[0][0].endswith(":m:4848:71")
