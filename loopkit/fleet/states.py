"""Every machine's loops in the fleet (SPEC section 22): each machine publishes the rows its
own ``loopkit ps`` reads from files to ``loopkit_loops``, and reads the other machines'.

- **Who publishes.** The follower (:mod:`loopkit.fleet.follow`) of ``loopkit serve``
  publishes every registered loop of its fleet each :data:`BEAT` seconds; a supervisor's
  follower publishes its own loop each beat and within a second of each change of its state,
  and the supervisor publishes its last row as it ends. The row is what
  :func:`loopkit.loops.read_loop` reads — the one reading of a loop, here and there.
- **A later read wins.** ``read_ns`` is when the machine read the files (its own clock;
  only that machine writes its rows): a row read earlier never replaces one read later,
  whichever process's write lands last.
- **Not heard from.** ``updated_at`` is the database's time of the last write: a row whose
  state says a supervisor runs (running, blocked, paused) and that has not been refreshed
  for :data:`STALE_BEATS` beats is ``stale`` — its machine is off, or cut off from the
  database — and :mod:`loopkit.loops` says so (with how long). The age is the database's
  clock against itself, so two machines' clocks never need to agree.
- **Never in a loop's way.** Publishing runs on the follower's thread (or, for the last row,
  through the hub's shared connection with its short connect timeout); a database that is
  gone, or a schema older than :data:`~loopkit.fleet.schema.LOOPS_VERSION`, skips it with one
  warning per process, and the next beat tries again. A value PostgreSQL cannot store
  (a NUL in a task or a verify line) is cleaned before it goes (:func:`storable`); a row
  the database still refuses is skipped alone, warned once, and is no outage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import psycopg
from psycopg.types.json import Jsonb

from loopkit import clock
from loopkit.fleet.publishing import BEAT, STALE_BEATS
from loopkit.fleet.schema import LOOPS_VERSION
from loopkit.log import get_logger
from loopkit.workspace import state as state_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.fleet.pg import PgHub

log = get_logger("loopkit.fleet")

ALIVE = tuple(status.value for status in state_file.ALIVE)  # a supervisor runs
# The row's fields as loopkit.loops.Loop names them (and the table's columns).
FIELDS = ("repo", "state", "pid", "iteration", "task", "since", "last_verify", "question",
          "request_id", "spend_usd", "paused_by", "guidance_pending", "problem")  # fmt: skip

UPSERT = f"""
INSERT INTO loopkit_loops (machine, workspace, {", ".join(FIELDS)}, read_ns, beat_seconds,
                           updated_at)
VALUES (%(machine)s, %(workspace)s, {", ".join(f"%({name})s" for name in FIELDS)},
        %(read_ns)s, %(beat_seconds)s, now())
ON CONFLICT (machine, workspace) DO UPDATE SET
  {", ".join(f"{name} = EXCLUDED.{name}" for name in FIELDS)},
  read_ns = EXCLUDED.read_ns, beat_seconds = EXCLUDED.beat_seconds, updated_at = now()
WHERE loopkit_loops.read_ns <= EXCLUDED.read_ns
"""
REMOTE = f"""
SELECT machine, workspace, {", ".join(FIELDS)}, updated_at,
  state IN {ALIVE!r} AND now() - updated_at > beat_seconds * {STALE_BEATS} * interval '1 second',
  extract(epoch FROM now() - updated_at)
FROM loopkit_loops WHERE machine <> %s ORDER BY machine, repo, workspace
"""


def storable(value: Any) -> Any:
    """``value`` as PostgreSQL stores it: text (also inside JSON) without NUL characters,
    which text and jsonb refuse, nor lone surrogates (a file read with ``surrogateescape``),
    which cannot be encoded."""
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "")
        try:
            value.encode()
        except UnicodeEncodeError:
            value = value.encode(errors="replace").decode()
        return value
    if isinstance(value, Mapping):
        return {storable(str(key)): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def params(machine: str, row: Mapping[str, Any], *, read_ns: int) -> dict[str, Any]:
    """A row's statement parameters (``row``: a Loop as a dict), storable."""
    values = {name: storable(row.get(name)) for name in FIELDS}
    values["last_verify"] = Jsonb(values["last_verify"]) if values["last_verify"] else None
    values["iteration"] = int(values["iteration"] or 0)
    values["guidance_pending"] = int(values["guidance_pending"] or 0)
    return {**values, "machine": machine, "workspace": storable(str(row["workspace"])),
            "read_ns": read_ns, "beat_seconds": BEAT}  # fmt: skip


def publish(
    conn: Any, machine: str, rows: list[Mapping[str, Any]], *, read_ns: int,
    refused: set[str] | None = None,
) -> None:  # fmt: skip
    """Upsert ``rows`` on ``conn`` (the follower's, in autocommit), at once. A row the
    database refuses (a value it cannot store: ``psycopg.DataError``) is no outage: the
    rows go again one by one, and each refused one is skipped — warned once per workspace
    while ``refused`` (the caller's) remembers it. Any other psycopg error goes to the
    caller."""
    if not rows:
        return
    batch = [params(machine, row, read_ns=read_ns) for row in rows]
    try:
        with conn.cursor() as cursor:
            cursor.executemany(UPSERT, batch)
        return
    except psycopg.DataError:
        pass
    for one in batch:
        try:
            conn.execute(UPSERT, one)
        except psycopg.DataError as exc:
            if refused is None or one["workspace"] not in refused:
                if refused is not None:
                    refused.add(one["workspace"])
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "refused"
                log.warning("fleet_row_refused", msg=f"fleet: cannot publish the loop at "
                            f"{one['workspace']}: {reason}; its row is not updated")  # fmt: skip


def publish_last(hub: PgHub, row: Mapping[str, Any], *, read_ns: int) -> None:
    """A supervisor's last row as it ends, through the hub's shared connection: never
    raises (the database gone: one warning per process, and the row stays as it was)."""
    if hub.ready(LOOPS_VERSION):
        hub._run(UPSERT, params(hub.machine, row, read_ns=read_ns))


def forget_gone(conn: Any, machine: str, kept: list[str]) -> None:
    """Drop this machine's rows of workspaces no longer registered here (deleted ones)."""
    conn.execute(
        "DELETE FROM loopkit_loops WHERE machine = %s AND NOT (workspace = ANY(%s))",
        (machine, kept),
    )


def remote(hub: PgHub) -> list[dict[str, Any]] | None:
    """Other machines' loops in this fleet, each a dict of the Loop fields with
    ``machine``, ``workspace``, ``heard_at`` (ISO-8601 UTC), ``stale`` and
    ``heard_seconds`` (how long ago its machine last refreshed it); None when the database
    cannot be reached (a schema older than steering: none)."""
    if not hub.ready(LOOPS_VERSION):
        return [] if hub.schema_read else None
    rows = hub._run(REMOTE, (hub.machine,))
    if rows is None:
        return None
    found = []
    for row in rows:
        data = dict(zip(("machine", "workspace", *FIELDS), row[: 2 + len(FIELDS)], strict=True))
        heard_at, stale, heard_seconds = row[2 + len(FIELDS) :]
        data["heard_at"] = clock.iso_seconds(heard_at)
        data["stale"] = bool(stale)
        data["heard_seconds"] = float(heard_seconds)
        found.append(data)
    return found


def now_ns() -> int:
    """The ``read_ns`` of a read made now."""
    return time.time_ns()
