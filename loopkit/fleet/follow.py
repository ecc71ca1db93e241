"""The owner's side of the fleet: LISTEN for answers to this machine's requests, apply them
to the workspace's own record (and lift its block), and catch up after the database was
gone; LISTEN for steering orders for this machine's loops and land them
(:mod:`~loopkit.fleet.steering`); publish this machine's loops (:mod:`~loopkit.fleet.states`).
Runs in a thread of ``loopkit run`` and of ``loopkit serve``.

One connection, reconnected with backoff (1 s, doubling, at most 10 s). On every
(re)connect: this machine is marked seen, every record changed since the last catch-up is
mirrored, every answer and steering order written meanwhile is applied, and the loops are
published. Two answers to one request (one given here while the database was gone, one on
another machine) are settled by their recorded time: the first stands, the other is logged
as not used. Each :data:`BEAT` the follower looks again for answers and orders a NOTIFY may
have missed, and publishes the loops again (their heartbeat); a supervisor's own loop is
also published within a second of each change of its state. Loop states and steering need
schema version 3: with an older schema they are skipped, with one warning, and requests are
followed as before.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg

from loopkit import atomicfile, channels, readfile
from loopkit.errors import LoopkitError
from loopkit.escalation import allow
from loopkit.escalation.blockfile import remove_block
from loopkit.fleet import states, steering
from loopkit.fleet.pg import CHANNEL
from loopkit.fleet.publishing import BEAT
from loopkit.fleet.schema import LOOPS_VERSION
from loopkit.fleet.schema import version as schema_version
from loopkit.home import home
from loopkit.log import get_logger
from loopkit.message import Notice, fold
from loopkit.requests.answer import outcome_of
from loopkit.requests.reading import told_back
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from typing import Any

    from loopkit.fleet.pg import PgHub
    from loopkit.fleet.publishing import Publishing
    from loopkit.home import Registered
    from loopkit.requests.locate import Place, Stores
    from loopkit.workspace import Workspace

log = get_logger("loopkit.fleet")

MARGIN_NS = 5_000_000_000  # re-mirror records written this close before the last catch-up


def _first(record: Request) -> str:
    resolved_at = record.resolution.resolved_at if record.resolution else None
    return str(resolved_at or record.updated_at)


class Follower:
    """Follows one fleet (``hub``) for the workspaces of this machine whose configuration
    names it (``stores`` gives each workspace's store with its own hub)."""

    def __init__(
        self,
        hub: PgHub,
        stores: Stores,
        stop: threading.Event,
        wake: Callable[[], None] | None,
        publishing: Publishing | None = None,
    ) -> None:
        self.hub = hub
        self.stores = stores
        self.stop = stop
        self.wake = wake
        self.publishing = publishing
        self.synced = home() / "fleet" / "synced.json"
        self.loops_ready = False  # the schema has the loop and steering tables
        self._unreadable: set[Path] = set()  # loops whose reading failed (warned once)
        self._refused: set[str] = set()  # loops whose row the database refused (warned once)

    def run(self) -> None:
        backoff = 1.0
        while not self.stop.is_set():
            conn = self.hub.connect(f"loopkit follow {self.hub.machine}")
            if conn is None:
                self._caught_up()  # nothing to catch up with: the loop need not wait
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 1.0
            try:
                with conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.catch_up(conn)
                    self._caught_up()
                    beat = time.monotonic()
                    while not self.stop.is_set():
                        # Gathered first: the connection is busy while notifies() runs.
                        notes = [
                            (n.channel, n.payload) for n in conn.notifies(timeout=1.0, stop_after=1)
                        ]
                        for channel, payload in notes:
                            if channel != steering.CHANNEL:
                                self._notified(conn, payload)
                            elif payload == self.hub.machine:
                                self._steer(conn)
                        if self.publishing is not None and self.publishing.changed.is_set():
                            self.publishing.changed.clear()
                            self._publish(conn)
                        if time.monotonic() - beat >= BEAT:
                            self._pending(conn)
                            self._seen(conn)
                            self._loops_beat(conn)
                            beat = time.monotonic()
            except psycopg.Error as exc:
                self.hub.down(exc)
                self._caught_up()
                self.stop.wait(backoff)

    def _caught_up(self) -> None:
        if self.publishing is not None:
            self.publishing.caught_up.set()

    # --- catching up ------------------------------------------------------------------------

    def catch_up(self, conn: Any) -> None:
        self._seen(conn)
        started = time.time_ns()
        since = self._synced_ns() - MARGIN_NS
        for registered, place in self.stores.registered():
            if place.store.hub is not self.hub:
                continue  # a workspace of another fleet, or of this machine alone
            try:
                for request_id in place.store.changed_since(since):
                    self.hub.mirror(place.workspace, place.store.load(request_id))
            except LoopkitError as exc:
                log.warning("fleet_sync_failed", msg=f"fleet: cannot sync {registered.path}: {exc}")
        self.synced.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomicfile.write_json(self.synced, {"ns": started}, durable=False)
        self._pending(conn)
        self.loops_ready = False  # a new connection: LISTEN again once the schema has it
        self._loops_beat(conn)

    def _synced_ns(self) -> int:
        try:
            data = readfile.json_document(readfile.read_text(self.synced))
            return int(data["ns"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def _seen(self, conn: Any) -> None:
        conn.execute(
            "INSERT INTO loopkit_machines (machine, seen_at) VALUES (%s, now()) "
            "ON CONFLICT (machine) DO UPDATE SET seen_at = now()",
            (self.hub.machine,),
        )

    def _pending(self, conn: Any) -> None:
        rows = conn.execute(
            "SELECT workspace, request_id, answer FROM loopkit_requests "
            "WHERE machine = %s AND answer IS NOT NULL",
            (self.hub.machine,),
        ).fetchall()
        for workspace, request_id, answer in rows:
            self.apply(workspace, request_id, answer)

    def _notified(self, conn: Any, payload: str) -> None:
        try:
            key = json.loads(payload)
        except ValueError:
            return
        if not isinstance(key, dict) or key.get("machine") != self.hub.machine:
            return  # another machine's request: its owner applies it
        row = conn.execute(
            "SELECT answer FROM loopkit_requests WHERE machine = %s AND workspace = %s "
            "AND request_id = %s AND answer IS NOT NULL",
            (self.hub.machine, key.get("workspace"), key.get("request_id")),
        ).fetchone()
        if row is not None:
            self.apply(str(key.get("workspace")), str(key.get("request_id")), row[0])

    # --- loops: steering and states (SPEC §22) ------------------------------------------

    def _loops_beat(self, conn: Any) -> None:
        """Steering orders a NOTIFY may have missed, and every loop's row (the heartbeat)."""
        if not self.loops_ready:
            found = schema_version(conn)
            if found < LOOPS_VERSION:
                self.hub.outdated(found, LOOPS_VERSION)
                return
            conn.execute(f"LISTEN {steering.CHANNEL}")
            self.loops_ready = True
        entries = self.stores.registry.workspaces()  # read once for the whole beat
        self._steer(conn, entries)
        self._publish(conn, everything=True, entries=entries)

    def _places(self, entries: list[Registered]) -> dict[str, tuple[Registered, Place]]:
        """Of the registry's ``entries``, the workspaces whose fleet is this one, by path."""
        return {
            str(registered.path): (registered, place)
            for registered, place in self.stores.registered(entries)
            if place.store.hub is self.hub
        }

    def _steer(self, conn: Any, entries: list[Registered] | None = None) -> None:
        """Land the pending orders; ``entries``: the registry as read already this beat."""
        if not self.loops_ready:
            return
        if entries is None:
            entries = self.stores.registry.workspaces()
        places = self._places(entries)
        workspaces: dict[str, Workspace] = {k: p.workspace for k, (_, p) in places.items()}
        registered = [str(entry.path) for entry in entries]
        touched = steering.apply_pending(conn, self.hub.machine, workspaces, registered)
        if touched and self.publishing is not None:  # the pause or note shows at once
            self._publish_rows(conn, [places[path][0] for path in dict.fromkeys(touched)])

    def _publish(
        self, conn: Any, *, everything: bool = False, entries: list[Registered] | None = None
    ) -> None:
        """Publish the loops this follower publishes: the supervisor's own (``everything``
        or not), or every registered one of this fleet (``serve``, at each beat; ``entries``:
        the registry as read already this beat)."""
        publishing = self.publishing
        if publishing is None or not self.loops_ready:
            return
        if publishing.own is not None:
            try:
                mine = self.stores.of(publishing.own.path).hub is self.hub
            except LoopkitError:
                mine = False
            self._publish_rows(conn, [publishing.own] if mine else [])
            return
        if not everything:
            return
        if entries is None:
            entries = self.stores.registry.workspaces()
        self._publish_rows(conn, [registered for registered, _ in self._places(entries).values()])
        kept = [str(registered.path) for registered in entries]
        states.forget_gone(conn, self.hub.machine, kept)

    def _publish_rows(self, conn: Any, entries: list[Registered]) -> None:
        publishing = self.publishing
        if publishing is None or not entries:
            return
        read_ns = states.now_ns()  # before the reads: a row read later always wins
        rows = []
        for entry in entries:
            try:
                rows.append(publishing.describe(entry))
            except Exception as exc:  # a loop that cannot be read must not stop the follower
                if entry.path not in self._unreadable:
                    self._unreadable.add(entry.path)
                    why = f"fleet: cannot read the loop at {entry.path}: {exc}"
                    log.warning("fleet_publish_failed", msg=why)
        states.publish(conn, self.hub.machine, rows, read_ns=read_ns, refused=self._refused)

    # --- applying ---------------------------------------------------------------------------

    def _tell_loser(self, root: Path, repo: str, loser: Request, winner: Request) -> None:
        """The human whose answer lost, once the database was back, is told so on the
        channel they answered from (SPEC §28); one who answered from a terminal or the
        inbox finds the answer that stands on the request (and in the events)."""
        lost, stands = loser.resolution, winner.resolution
        if lost is None or stands is None:
            return
        said = fold(lost.reply or str(lost.parsed_decision or ""), 60)
        who = stands.by_name or stands.by or "someone"
        text = (f"“{said}” to “{fold(loser.prompt, 80)}” was not used: {who} answered first "
                f"via {stands.via} — {told_back(winner)}")  # fmt: skip
        log.warning(
            "answer_not_used",
            request_id=loser.request_id,
            by=lost.by,
            via=lost.via,
            msg=f"fleet: {lost.by}'s answer to {loser.request_id} was not used",
        )
        if lost.via not in channels.CHANNELS:
            return
        try:
            config = self.stores.place(root).config
            channel = channels.create(str(lost.via), config.channels)
            channel.send(Notice(repo, text, request_id=loser.request_id, agent="your answer"))
        except Exception as exc:  # telling is best effort: the record says what stands
            log.warning("answer_not_used_untold", msg=f"fleet: could not tell {lost.by}: {exc}")

    def apply(self, workspace: str, request_id: str, answer: Any) -> None:
        """Give this machine's record the answer another machine wrote (once)."""
        try:
            remote = Request.from_dict(answer["record"], source="fleet answer")
            store = self.stores.of(Path(workspace))
        except (LoopkitError, KeyError, TypeError) as exc:
            log.warning("fleet_apply_failed", msg=f"fleet: cannot apply {request_id}: {exc}")
            return
        taken = False
        lost: list[tuple[Request, Request]] = []  # (the answer not used, the one that stands)

        def take(local: Request) -> bool:
            nonlocal taken
            if local.is_open:
                taken = True
            elif local.resolution == remote.resolution and local.status == remote.status:
                return False  # applied already
            elif _first(remote) < _first(local) and local.applied_at is None:
                taken = True  # two answers while the database was gone: the first stands
                lost.append((Request.from_dict(local.to_dict()), remote))
                log.warning(
                    "fleet_two_answers",
                    request_id=request_id,
                    msg=f"request {request_id} was answered twice; the first answer "
                    f"({remote.resolution and remote.resolution.to_dict()}) stands, the later "
                    "one was not used",
                )
            else:
                lost.append((remote, Request.from_dict(local.to_dict())))
                log.warning(
                    "fleet_two_answers",
                    request_id=request_id,
                    msg=f"request {request_id} was answered twice; the first answer "
                    "(this machine's) stands, the other machine's was not used",
                )
                return False
            local.status = remote.status
            local.resolution = remote.resolution
            local.deferrals = remote.deferrals
            return True

        try:
            record = store.update(request_id, take)
        except LoopkitError as exc:
            log.warning("fleet_apply_failed", msg=f"fleet: cannot apply {request_id}: {exc}")
            return
        for loser, winner in lost:
            self._tell_loser(Path(workspace), store.workspace.repo_name(), loser, winner)
        if taken and record.status in ("resolved", "dismissed"):
            remove_block(store.workspace.blocked, record)
        self.hub.mirror_applied(store.workspace, record)
        if taken:
            res = record.resolution
            log.info(
                "fleet_applied",
                request_id=request_id,
                status=record.status,
                outcome=outcome_of(record),
                decision=res.parsed_decision if res else None,
                by=res.by if res else None,
                via=res.via if res else None,
                machine=answer.get("by_machine") if isinstance(answer, dict) else None,
                workspace=str(store.workspace.root),
                msg=f"fleet: request {request_id} answered on another machine",
            )
            allow.on_answer(store.workspace.root, record, store)
            if self.wake is not None:
                self.wake()
