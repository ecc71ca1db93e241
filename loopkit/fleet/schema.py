"""The fleet's tables in PostgreSQL, versioned: ``loopkit fleet init`` creates or migrates
them (idempotent), ``loopkit fleet status`` reads them.

- ``loopkit_requests``: every request of every machine — (machine, workspace, request_id),
  repo, status, updated_at, the record as JSON, and ``answer``: an answer given on another
  machine that its owner has not applied yet (cleared once it has).
- ``loopkit_bot_offsets``: each bot's next update offset and when its last update was seen
  (``seen_at``; the lease is an advisory lock).
- ``loopkit_bot_updates``: the updates each bot's poller handled in the last eight days, so
  whichever machine takes the lease next applies none of them twice (SPEC §16).
- ``loopkit_machines``: when each machine's loopkit was last seen.
- ``loopkit_loops``: every machine's loops as its ``loopkit ps`` reads them (SPEC §22) —
  (machine, workspace), repo, state, pid, iteration, task, since, the last verify, the open
  question and its request id, spend, the pause in force, the notes waiting; ``read_ns``
  (when its machine read the files: a later read wins), ``beat_seconds`` (how often its
  machine refreshes the row) and ``updated_at`` (the database's time of the last refresh:
  a row not refreshed for a few beats is a machine not heard from).
- ``loopkit_steer``: pause / resume / stop / note orders for another machine's loop, each
  applied once by that machine (``applied_at``, ``outcome``).
"""

from __future__ import annotations

from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE loopkit_requests (
                machine text NOT NULL,
                workspace text NOT NULL,
                request_id text NOT NULL,
                repo text NOT NULL,
                status text NOT NULL,
                updated_at timestamptz NOT NULL,
                record jsonb NOT NULL,
                answer jsonb,
                answered_at timestamptz,
                PRIMARY KEY (machine, workspace, request_id))""",
            "CREATE INDEX loopkit_requests_status ON loopkit_requests (status)",
            "CREATE INDEX loopkit_requests_id ON loopkit_requests (request_id)",
            """CREATE TABLE loopkit_bot_offsets (
                bot text PRIMARY KEY,
                next_offset bigint NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now())""",
            """CREATE TABLE loopkit_machines (
                machine text PRIMARY KEY,
                seen_at timestamptz NOT NULL)""",
        ],
    ),
    (
        2,  # SPEC §16: an offset quiet for six days is dropped; handled updates are kept
        [
            "ALTER TABLE loopkit_bot_offsets ADD COLUMN IF NOT EXISTS seen_at timestamptz",
            # An offset was saved only when updates came: updated_at is when one was seen.
            "UPDATE loopkit_bot_offsets SET seen_at = updated_at WHERE seen_at IS NULL",
            """CREATE TABLE IF NOT EXISTS loopkit_bot_updates (
                bot text NOT NULL,
                update_key text NOT NULL,
                handled_at timestamptz NOT NULL,
                PRIMARY KEY (bot, update_key))""",
            """CREATE INDEX IF NOT EXISTS loopkit_bot_updates_handled
                ON loopkit_bot_updates (bot, handled_at)""",
        ],
    ),
    (
        3,  # SPEC §22: every machine's loops, and steering them from anywhere
        [
            """CREATE TABLE IF NOT EXISTS loopkit_loops (
                machine text NOT NULL,
                workspace text NOT NULL,
                repo text NOT NULL,
                state text NOT NULL,
                pid integer,
                iteration integer NOT NULL DEFAULT 0,
                task text,
                since text,
                last_verify jsonb,
                question text,
                request_id text,
                spend_usd double precision,
                paused_by text,
                guidance_pending integer NOT NULL DEFAULT 0,
                problem text,
                read_ns bigint NOT NULL,
                beat_seconds real NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (machine, workspace))""",
            """CREATE TABLE IF NOT EXISTS loopkit_steer (
                id bigserial PRIMARY KEY,
                machine text NOT NULL,
                workspace text NOT NULL,
                command text NOT NULL,
                note text,
                given_by text NOT NULL,
                via text NOT NULL,
                from_machine text NOT NULL,
                given_at timestamptz NOT NULL DEFAULT now(),
                applied_at timestamptz,
                outcome text)""",
            """CREATE INDEX IF NOT EXISTS loopkit_steer_pending
                ON loopkit_steer (machine) WHERE applied_at IS NULL""",
        ],
    ),
]
LOOPS_VERSION = 3  # the first schema with loopkit_loops and loopkit_steer
LATEST = MIGRATIONS[-1][0]


def init(conn: Any) -> tuple[int, int]:
    """Bring the schema to :data:`LATEST`; returns (version before, version now)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('loopkit-schema'))")
        conn.execute("CREATE TABLE IF NOT EXISTS loopkit_schema (version integer NOT NULL)")
        row = conn.execute("SELECT max(version) FROM loopkit_schema").fetchone()
        before = int(row[0]) if row and row[0] is not None else 0
        for version, statements in MIGRATIONS:
            if version <= before:
                continue
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO loopkit_schema (version) VALUES (%s)", (version,))
    return before, LATEST


def version(conn: Any) -> int:
    """The schema's version; 0 when ``fleet init`` never ran on this database."""
    exists = conn.execute("SELECT to_regclass('loopkit_schema') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM loopkit_schema").fetchone()
    return int(row[0]) if row else 0


def status(conn: Any) -> dict[str, Any]:
    """Machines seen, open requests, who holds which bot's lease, the lag, each machine's
    loops and the steering orders their machine has not applied yet."""
    machines = conn.execute(
        "SELECT machine, seen_at, extract(epoch FROM now() - seen_at) FROM loopkit_machines "
        "ORDER BY machine"
    ).fetchall()
    open_rows = conn.execute(
        "SELECT machine, count(*) FROM loopkit_requests WHERE status IN ('open', 'deferred') "
        "GROUP BY machine ORDER BY machine"
    ).fetchall()
    pending = conn.execute(
        "SELECT count(*), extract(epoch FROM now() - min(answered_at)) FROM loopkit_requests "
        "WHERE answer IS NOT NULL"
    ).fetchone()
    leases = conn.execute(
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND a.application_name LIKE 'loopkit lease %'"
    ).fetchall()
    found = version(conn)
    loops: dict[str, int] = {}
    steering = 0
    if found >= LOOPS_VERSION:
        rows = conn.execute(
            "SELECT machine, count(*) FROM loopkit_loops GROUP BY machine ORDER BY machine"
        ).fetchall()
        loops = {m: int(n) for m, n in rows}
        waiting = conn.execute(
            "SELECT count(*) FROM loopkit_steer WHERE applied_at IS NULL"
        ).fetchone()
        steering = int(waiting[0]) if waiting else 0
    return {
        "schema_version": found,
        "machines": [
            {"machine": m, "seen_at": seen.isoformat(), "seen_seconds_ago": round(float(ago), 1)}
            for m, seen, ago in machines
        ],
        "open": {m: int(n) for m, n in open_rows},
        "leases": [name.removeprefix("loopkit lease ") for (name,) in leases],
        "answers_not_applied": int(pending[0]) if pending else 0,
        "oldest_unapplied_seconds": round(float(pending[1]), 1) if pending and pending[1] else 0,
        "loops": loops,
        "steering_not_applied": steering,
    }


def check(dsn: str | None) -> tuple[Literal["ok", "problem"], str] | None:
    """``loopkit doctor``'s word on the fleet: (level, text), or None without one."""
    if not dsn:
        return None
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
            found = version(conn)
    except psycopg.Error as exc:
        reason = Redactor((dsn,)).text(str(exc).strip().splitlines()[0] if str(exc) else "")
        return (
            "problem",
            f"the fleet database is unreachable ({reason}); check the DSN and the server",
        )
    if found == 0:
        return "problem", "the fleet database has no loopkit tables; run `loopkit fleet init`"
    if found < LATEST:
        return (
            "problem",
            f"the fleet schema is at version {found} of {LATEST}; run `loopkit fleet init`",
        )
    return "ok", f"the fleet database is reachable (schema version {found})"
