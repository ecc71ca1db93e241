"""The fleet on PostgreSQL (SPEC sections 13, 15 and 22): :mod:`~loopkit.fleet.pg` (the hub),
:mod:`~loopkit.fleet.follow` (the owner's side), :mod:`~loopkit.fleet.schema` (the tables),
:mod:`~loopkit.fleet.states` (every machine's loops) and :mod:`~loopkit.fleet.steering`
(pause, resume, stop and notes for another machine's loop).

:class:`Hubs` is where a process gets its hubs: built once where an application is assembled
(the CLI's App, ``serve``, ``run``'s Supervisor, ``mcp``) and handed down. It makes one
:class:`~loopkit.fleet.pg.PgHub` per DSN — one shared connection each — and hands out the
:class:`~loopkit.requests.hub.LocalHub` for a workspace without a fleet. psycopg is imported
only once a DSN is used.
"""

from __future__ import annotations

import contextlib
import os
import threading

from loopkit import extras
from loopkit.config.values import fleet_dsn
from loopkit.datarecord import record
from loopkit.errors import LoopkitError, LoopNotFound
from loopkit.requests.hub import LocalHub

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from loopkit.config import Config
    from loopkit.fleet.pg import PgHub
    from loopkit.fleet.publishing import Publishing
    from loopkit.requests.hub import Hub, Remote
    from loopkit.requests.locate import Stores


@record(frozen=True, slots=True)
class LoopRows:
    """Other machines' loops as :meth:`Hubs.remote_loop_rows` found them: their rows, and
    whether a fleet's database could not be reached for them (``unreached``)."""

    rows: list[dict[str, Any]]
    unreached: bool = False


class Hubs:
    """The hubs of one process: the local one, and one per fleet DSN.

    A process that serves several workspaces answers each request through the hub its own
    workspace's configuration names (:meth:`for_config`), or the environment's DSN when set
    (``LOOPKIT_FLEET_DSN``, which a Config already prefers); loading another workspace's
    config never changes it. :meth:`fleets` are every fleet this process knows of — the
    environment's, and each one a loaded config named — which the inboxes search for other
    machines' requests.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        self.local = LocalHub()
        self._made: dict[str, PgHub] = {}
        self._lock = threading.Lock()
        self._env_dsn: str | None = None
        with contextlib.suppress(ValueError):
            self._env_dsn = fleet_dsn(environ.get("LOOPKIT_FLEET_DSN", "")) or None

    def for_config(self, config: Config) -> Hub:
        """The hub ``config``'s workspace answers through (``load`` checked psycopg)."""
        return self.for_dsn(config.channels.fleet_dsn)

    def for_dsn(self, dsn: str | None) -> Hub:
        """The fleet at ``dsn`` (the same object for the same DSN), or the local hub."""
        if not dsn:
            return self.local
        with self._lock:
            if dsn not in self._made:
                from loopkit.fleet.pg import PgHub  # psycopg: only where a fleet is used

                self._made[dsn] = PgHub(dsn)
            return self._made[dsn]

    def fleets(self) -> list[PgHub]:
        """Every fleet hub this process knows: the environment's first, then those made."""
        if self._env_dsn and _installed():
            self.for_dsn(self._env_dsn)
        with self._lock:
            made = dict(self._made)
        first = [made.pop(self._env_dsn)] if self._env_dsn in made else []
        return [*first, *made.values()]

    def pg_hubs(self) -> list[PgHub]:
        """Every fleet hub this process knows (:meth:`fleets`)."""
        return self.fleets()

    def remote_open(self) -> list[Remote]:
        """Other machines' open requests, across every fleet known (each once)."""
        seen: set[tuple[str, str, str]] = set()
        found: list[Remote] = []
        for hub in self.fleets():
            for remote in hub.remote_open():
                key = (remote.machine, remote.workspace, remote.record.request_id)
                if key not in seen:
                    seen.add(key)
                    found.append(remote)
        return found

    def remote_loop_rows(self) -> LoopRows:
        """Other machines' loops, across every fleet known (each once), as
        :func:`loopkit.fleet.states.remote` gives them, and whether a fleet's database
        could not be reached for them."""
        hubs = self.pg_hubs()
        if not hubs:
            return LoopRows([])
        from loopkit.fleet import states

        seen: set[tuple[str, str]] = set()
        found: list[dict[str, Any]] = []
        unreached = False
        for hub in hubs:
            rows = states.remote(hub)
            if rows is None:
                unreached = True
                continue
            for row in rows:
                key = (row["machine"], row["workspace"])
                if key not in seen:
                    seen.add(key)
                    found.append(row)
        return LoopRows(found, unreached)

    def steer_remote(
        self, machine: str, workspace: str, command: str, note: str | None, *, by: str, via: str
    ) -> None:
        """Give another machine's loop ``command`` (``"note"``: ``note`` is its text) through
        the fleet that knows it. Raises LoopNotFound when none does, LoopkitError when the
        fleet cannot take it (the database gone, a schema to migrate)."""
        from loopkit.fleet import steering

        outcomes = []
        for hub in self.pg_hubs():  # the first fleet that knows the loop takes it: once
            given = steering.give(hub, machine=machine, workspace=workspace, command=command,
                                  note=note, by=by, via=via)  # fmt: skip
            if given == "given":
                return
            outcomes.append(given)
        if "unreachable" in outcomes:
            raise LoopkitError(f"cannot reach the fleet database to steer {workspace} on "
                               f"{machine}: do it there, or when the database is back")  # fmt: skip
        if "outdated" in outcomes:
            raise LoopkitError("the fleet schema predates steering: run `loopkit fleet init`, "
                               f"or steer {workspace} on {machine}")  # fmt: skip
        raise LoopNotFound(
            f"{machine} has no loop {workspace} in the fleet (any more); `loopkit ps` lists them"
        )

    def find(self, request_id: str) -> tuple[Hub, Remote] | None:
        """Another machine's request ``request_id``, with the hub that holds it."""
        for hub in self.fleets():
            remote = hub.find(request_id)
            if remote is not None:
                return hub, remote
        return None

    def close(self) -> None:
        """Close every fleet's shared connection (a later use opens a new one)."""
        for hub in self.pg_hubs():
            hub.close()


def _installed() -> bool:
    return extras.installed("psycopg")


def follow_answers(
    hubs: Hubs,
    stores: Stores,
    stop: threading.Event,
    wake: Callable[[], None] | None = None,
    *,
    publishing: Publishing | None = None,
) -> list[threading.Thread]:
    """With a fleet: one follower thread per fleet, so answers and steering orders given on
    other machines reach this machine's workspaces, and — given ``publishing`` — this
    machine's loops are published (:mod:`loopkit.fleet.follow`). Without one, nothing. The
    fleets are the environment's and every one a registered workspace names.

    Not named ``follow``: importing the submodule :mod:`loopkit.fleet.follow` sets the
    package's ``follow`` to the module, which would hide a function of that name."""
    stores.registered()  # load each workspace's config: its fleet's hub is made then
    pg_hubs = hubs.pg_hubs()
    if not pg_hubs:
        return []
    from loopkit.fleet.follow import Follower

    threads = []
    for hub in pg_hubs:
        thread = threading.Thread(
            target=Follower(hub, stores, stop, wake, publishing).run,
            daemon=True,
            name="loopkit-fleet",
        )
        thread.start()
        threads.append(thread)
    return threads


def publish_last(hubs: Hubs, hub: Hub, publishing: Publishing) -> None:
    """A supervisor's last row as it ends: ``publishing.own``'s, to ``hub`` (its
    workspace's; nothing without a fleet), read as ``ps`` will once this process is gone
    (an unhandled exception left state.json saying running: ``dead``). Never raises: the
    database gone, the row keeps its last word, which goes stale."""
    own = publishing.own
    if own is None or hub not in hubs.pg_hubs():
        return
    from loopkit.fleet import states

    read_ns = states.now_ns()  # before the read: a row read later always wins
    row = publishing.describe(own, exiting=os.getpid())
    states.publish_last(hub, row, read_ns=read_ns)
