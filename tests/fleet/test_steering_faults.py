"""Steering orders and loop rows when something goes wrong partway (SPEC section 22), in
process, against a real PostgreSQL server: the follower's connection cut while it lands
orders, a stop that waited in the fleet while its loop was restarted, a value PostgreSQL
cannot store, two followers of one database on one machine.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest

from loopkit import clock, fleet, loops
from loopkit.fleet import Hubs, states, steering
from loopkit.fleet.follow import Follower
from loopkit.fleet.pg import PgHub
from loopkit.fleet.publishing import Publishing
from loopkit.home import Registered, Registry
from loopkit.liveness import start_ticks
from loopkit.requests.locate import Stores
from loopkit.supervisor.pause import Controls
from loopkit.workspace import Workspace
from loopkit.workspace.steer import Notes, Steering

from helpers import wait_until

MACHINE = "b-machine"


class CutAt:
    """The follower's connection, cut — its backend terminated from another session, as a
    dropped network or a server restart would — just before the ``at``-th order it lands
    is marked applied (its file written by then)."""

    def __init__(self, conn: Any, dsn: str, at: int) -> None:
        self.conn = conn
        self.dsn = dsn
        self.at = at
        self.marks = 0

    def transaction(self) -> Any:
        return self.conn.transaction()

    def execute(self, sql: str, params: Any = None) -> Any:
        if sql == steering.DONE:
            self.marks += 1
            if self.marks == self.at:
                with psycopg.connect(self.dsn, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", (self.conn.info.backend_pid,))
        return self.conn.execute(sql, params)


def loop_at(root: Path, dsn: str) -> Workspace:
    """A workspace of machine b the fleet knows (its row in ``loopkit_loops``)."""
    root.mkdir(parents=True, exist_ok=True)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO loopkit_loops (machine, workspace, repo, state, read_ns, beat_seconds) "
            "VALUES (%s, %s, %s, 'running', 0, 10)",
            (MACHINE, str(root), root.name),
        )
    return Workspace(root, root / "BLOCKED.md")


def give(hub: PgHub, ws: Workspace, command: str, note: str | None = None) -> None:
    given = steering.give(hub, machine=MACHINE, workspace=str(ws.root), command=command,
                          note=note, by="ana", via="cli")  # fmt: skip
    assert given == "given"


def follower_conn(dsn: str) -> Any:
    """A connection as the follower makes it."""
    conn = PgHub(dsn).connect("loopkit follow test")
    assert conn is not None
    return conn


def pending(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT command, note FROM loopkit_steer WHERE applied_at IS NULL ORDER BY id"
        ).fetchall()


def pause_landed_then_cut(
    tmp_path: Path, dsn: str, hub: PgHub
) -> tuple[Workspace, dict[str, Workspace]]:
    """A pause given for a loop, landed in its file, and the connection cut before it was
    marked applied: the order is still pending."""
    ws = loop_at(tmp_path / "api", dsn)
    give(hub, ws, "pause")
    places = {str(ws.root): ws}
    with follower_conn(dsn) as conn, pytest.raises(psycopg.OperationalError):
        steering.apply_pending(CutAt(conn, dsn, at=1), MACHINE, places)
    return ws, places


@pytest.fixture
def hub(dsn: str) -> Any:
    made = PgHub(dsn)
    yield made
    made.close()


def test_a_connection_cut_while_landing_lands_no_note_twice(
    tmp_path: Path, dsn: str, hub: PgHub
) -> None:
    ws = loop_at(tmp_path / "api", dsn)
    give(hub, ws, "note", "first")
    give(hub, ws, "note", "second")
    places = {str(ws.root): ws}
    with follower_conn(dsn) as conn, pytest.raises(psycopg.OperationalError):
        steering.apply_pending(CutAt(conn, dsn, at=2), MACHINE, places)
    with follower_conn(dsn) as conn:  # the next look, on a new connection
        steering.apply_pending(conn, MACHINE, places)
    assert [note.text for note in Notes(ws).pending()] == ["first", "second"]
    assert pending(dsn) == []
    events = (ws.state_dir / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"] for line in events] == ["guidance_given"] * 2


def test_a_connection_cut_after_a_pause_landed_does_not_land_it_again(
    tmp_path: Path, dsn: str, hub: PgHub
) -> None:
    ws, places = pause_landed_then_cut(tmp_path, dsn, hub)
    landed = Steering(ws).latest()
    assert landed is not None and landed.command == "pause"
    with follower_conn(dsn) as conn:
        steering.apply_pending(conn, MACHINE, places)
    assert Steering(ws).latest() == landed  # the same order, not written again
    assert pending(dsn) == []


def test_a_stop_given_before_the_supervisor_started_does_not_stop_it_when_it_lands_late(
    tmp_path: Path, dsn: str, hub: PgHub
) -> None:
    # b's supervisor was killed; a stop for it waited in the fleet; a new supervisor starts
    # on b before the stop lands (the database was gone, or its catch-up was slow).
    ws = loop_at(tmp_path / "api", dsn)
    give(hub, ws, "stop")
    with psycopg.connect(dsn) as conn:
        given_at = conn.execute("SELECT max(given_at) FROM loopkit_steer").fetchone()
    assert given_at is not None
    wait_until(lambda: clock.now() > given_at[0] + timedelta(milliseconds=20), what="a moment")
    stopped: list[int] = []
    parts: Any = SimpleNamespace(workspace=ws, changed=threading.Event(),
                                 wake=threading.Event(), stop=threading.Event())  # fmt: skip
    with Controls(parts, stopped.append) as controls:
        with follower_conn(dsn) as conn:  # the old stop lands now, with the time it was given
            steering.apply_pending(conn, MACHINE, {str(ws.root): ws})
        landed = Steering(ws).latest()
        assert landed is not None and landed.command == "stop"
        # Stamped with when it was given, not when it landed.
        assert abs(clock.parse_iso(landed.at) - given_at[0]).total_seconds() < 1
        controls._look()
        assert stopped == []  # history, not an order for this run
        give(hub, ws, "stop")  # a stop given now reaches it
        with follower_conn(dsn) as conn:
            steering.apply_pending(conn, MACHINE, {str(ws.root): ws})
        controls._look()
        wait_until(lambda: stopped == [signal.SIGTERM], what="the new stop to stop it")


def test_a_pause_landing_after_a_later_resume_here_does_not_pause_again(
    tmp_path: Path, dsn: str, hub: PgHub
) -> None:
    # The pause landed, the connection was cut before it was marked; meanwhile someone on b
    # resumed the loop. The next look must not pause it again with the older order.
    ws, places = pause_landed_then_cut(tmp_path, dsn, hub)
    Steering(ws).give("resume", by="bo", via="cli")
    with follower_conn(dsn) as conn:
        steering.apply_pending(conn, MACHINE, places)
    latest = Steering(ws).latest()
    assert latest is not None and (latest.command, latest.by) == ("resume", "bo")
    assert pending(dsn) == []


def test_of_two_orders_landing_out_of_turn_the_later_given_stands(
    tmp_path: Path, dsn: str, hub: PgHub
) -> None:
    # Two followers of b: one holds the pause (locked, landing), the other takes the resume
    # given after it, and lands it first.
    ws = loop_at(tmp_path / "api", dsn)
    give(hub, ws, "pause")
    give(hub, ws, "resume")
    places = {str(ws.root): ws}
    with psycopg.connect(dsn) as holder:
        holder.execute("SELECT id FROM loopkit_steer WHERE command = 'pause' FOR UPDATE")
        with follower_conn(dsn) as conn:
            steering.apply_pending(conn, MACHINE, places)
        assert pending(dsn) == [("pause", None)]
    with follower_conn(dsn) as conn:
        steering.apply_pending(conn, MACHINE, places)
    latest = Steering(ws).latest()
    assert latest is not None and latest.command == "resume"
    with psycopg.connect(dsn) as conn:
        outcome = conn.execute("SELECT outcome FROM loopkit_steer WHERE command = 'pause'")
        assert str(outcome.fetchone()[0]).startswith("overtaken: resume by ana via cli at ")


def row_of(workspace: str, **fields: Any) -> dict[str, Any]:
    """A loop's row as :func:`loopkit.loops.describe` gives it."""
    return {"workspace": workspace, "repo": Path(workspace).name, "state": "running",
            "pid": 4242, "iteration": 3, "task": "ship it", "since": None,
            "last_verify": None, "question": None, "request_id": None, "spend_usd": None,
            "paused_by": None, "guidance_pending": 0, "problem": None, **fields}  # fmt: skip


def test_a_value_postgresql_cannot_store_stops_no_row_of_the_machine(dsn: str) -> None:
    rows = [
        row_of("/r/nul", task="fix\x00 the parser", last_verify={"ok": False, "line": "a\x00b"}),
        row_of("/r/huge", iteration=2**40),  # more than the column holds: refused, alone
        row_of("/r/fine"),
        row_of("/r/bytes", task="caf\udce9"),  # a file read with surrogateescape
    ]
    refused: set[str] = set()
    with follower_conn(dsn) as conn:
        states.publish(conn, MACHINE, rows, read_ns=1)
        states.publish(conn, MACHINE, rows, read_ns=2, refused=refused)  # the next beat
        states.publish(conn, MACHINE, rows, read_ns=3, refused=refused)
        conn.execute("SELECT 1")  # the connection is as good as before
    with psycopg.connect(dsn) as conn:
        found = conn.execute("SELECT workspace, task, last_verify, read_ns FROM loopkit_loops "
                             "WHERE machine = %s", (MACHINE,)).fetchall()  # fmt: skip
    stored = {workspace: tuple(rest) for workspace, *rest in found}
    assert stored["/r/nul"] == ("fix the parser", {"ok": False, "line": "ab"}, 3)
    assert stored["/r/fine"] == ("ship it", None, 3)
    assert stored["/r/bytes"][0] == "caf?"
    assert "/r/huge" not in stored and refused == {"/r/huge"}


def test_a_follower_takes_only_the_orders_of_its_own_workspaces(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two workspaces of b name one database with two spellings of its DSN: two hubs, two
    # followers, each steering its own workspace.
    monkeypatch.setenv("LOOPKIT_HOME", str(tmp_path / "home-b"))
    hubs = Hubs(environ={})
    spelled = {"api": dsn, "web": dsn + "?application_name=web"}
    spaces = {}
    for repo, its_dsn in spelled.items():
        root = tmp_path / repo
        root.mkdir()
        (root / "loopkit.toml").write_text(f'[fleet]\ndsn = "{its_dsn}"\n')
        Registry().register(root, repo)
        spaces[repo] = Workspace(root, root / "BLOCKED.md")
    stores = Stores(hubs.for_config)
    followers = {}
    for repo, its_dsn in spelled.items():
        its_hub = hubs.for_dsn(its_dsn)
        assert isinstance(its_hub, PgHub)
        followers[repo] = Follower(its_hub, stores, threading.Event(), None)
    machine = followers["api"].hub.machine
    gone = tmp_path / "gone"  # a workspace no longer registered on b
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for root in (spaces["web"].root, gone, spaces["api"].root):
                conn.execute(
                    "INSERT INTO loopkit_steer (machine, workspace, command, given_by, via, "
                    "from_machine) VALUES (%s, %s, 'pause', 'ana', 'cli', 'a')",
                    (machine, str(root)),
                )
        with follower_conn(dsn) as conn:  # api's follower looks first
            followers["api"].loops_ready = True
            followers["api"]._steer(conn)
        assert Steering(spaces["web"]).latest() is None
        assert pending(dsn) == [("pause", None)]  # web's, for its own follower
        with follower_conn(dsn) as conn:
            followers["web"].loops_ready = True
            followers["web"]._steer(conn)
        paused = Steering(spaces["web"]).latest()
        assert paused is not None and paused.command == "pause" and pending(dsn) == []
        with psycopg.connect(dsn) as conn:
            outcomes = conn.execute("SELECT outcome FROM loopkit_steer ORDER BY id").fetchall()
        assert [outcome for (outcome,) in outcomes] == [
            "applied", "refused: no such workspace is registered on this machine", "applied",
        ]  # fmt: skip
    finally:
        hubs.close()


class CountedRegistry(Registry):
    """The registry, counting its reads of the folder."""

    reads = 0

    def workspaces(self) -> list[Registered]:
        self.reads += 1
        return super().workspaces()


def test_a_follower_beat_reads_the_registry_once(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `serve`'s follower at its beat: steering and publishing see one reading of the folder.
    monkeypatch.setenv("LOOPKIT_HOME", str(tmp_path / "home-b"))
    hubs = Hubs(environ={})
    root = tmp_path / "api"
    root.mkdir()
    (root / "loopkit.toml").write_text(f'[fleet]\ndsn = "{dsn}"\n')
    registry = CountedRegistry()
    registry.register(root, "api")
    its_hub = hubs.for_dsn(dsn)
    assert isinstance(its_hub, PgHub)
    stores = Stores(hubs.for_config, registry=registry)
    follower = Follower(its_hub, stores, threading.Event(), None, Publishing(loops.describe))
    try:
        with follower_conn(dsn) as conn:
            follower._loops_beat(conn)
        assert registry.reads == 1
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT workspace FROM loopkit_loops").fetchall()
        assert rows == [(str(root),)]  # published all the same
    finally:
        hubs.close()


def test_the_last_row_of_a_supervisor_ending_on_a_crash_says_dead_not_running(
    tmp_path: Path, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unhandled exception ends the supervisor (this process plays it): state.json still
    # says running, with its pid — alive while the last row is read.
    monkeypatch.setenv("LOOPKIT_HOME", str(tmp_path / "home-b"))
    root = tmp_path / "api"
    (root / ".loopkit").mkdir(parents=True)
    state = {"status": "running", "pid": os.getpid(), "pid_start": start_ticks(os.getpid()),
             "iteration": 2, "task": "add the price endpoint"}  # fmt: skip
    (root / ".loopkit" / "state.json").write_text(json.dumps(state))
    hubs = Hubs(environ={})
    hub = hubs.for_dsn(dsn)
    try:
        own = Registered(root, "api", "")
        assert loops.read_loop(own).state == "running"  # as ps reads it meanwhile
        fleet.publish_last(hubs, hub, Publishing(loops.describe, own=own))
    finally:
        hubs.close()
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT state, pid, iteration FROM loopkit_loops").fetchone()
    assert row == ("dead", None, 2)  # what ps reads once the pid is gone
