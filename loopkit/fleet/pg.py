"""The fleet on PostgreSQL (psycopg 3): a :class:`~loopkit.requests.hub.Hub` for many
machines, made by :class:`loopkit.fleet.Hubs` (one per DSN).

- Every write of a record is mirrored to ``loopkit_requests`` (an upsert; the file stays the
  record). A row answered from another machine keeps its answer until its owner applies it.
- An answer is claimed with a compare-and-set on the row's status, so exactly one answer
  wins fleet-wide: this machine's own answers inside the store's lock (:meth:`PgHub.claim`),
  other machines' requests by :meth:`PgHub.answer_remote` (or :meth:`PgHub.dismiss_remote`),
  which announces itself with ``NOTIFY loopkit_answer``. The owner LISTENs
  (:mod:`loopkit.fleet.follow`) and applies it.
- The bot lease is ``pg_try_advisory_lock`` on a connection of its own; the offset is a row,
  and the updates its poller handled are rows too (SPEC §16).

The database may be gone at any time. Then every method works locally — mirrors are skipped,
answers are this machine's alone, the lease is the machine's ``flock`` — with one warning
per process, and the follower mirrors what changed and settles answers when it is back: the
first answer by its recorded time wins.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import TypeVar

import psycopg
from psycopg.types.json import Jsonb

from loopkit import clock
from loopkit.errors import RequestConflict
from loopkit.fleet.schema import version as schema_version
from loopkit.home import machine
from loopkit.home.bot import KEEP_HANDLED, BotLease, OffsetFile, Position
from loopkit.log import bridge, get_logger
from loopkit.requests.answer import already_answered, apply_reply, dismiss_record
from loopkit.requests.hub import Remote
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from datetime import datetime
    from typing import Any

    from loopkit.requests.answer import Answer
    from loopkit.requests.hub import Lease, Offsets
    from loopkit.workspace import Workspace

log = get_logger("loopkit.fleet")

T = TypeVar("T")

CHANNEL = "loopkit_answer"
CONNECT_TIMEOUT = 2  # seconds: a database that is gone must not hold up a block
QUIET_AFTER_FAILURE = 5.0  # seconds without new tries once a connection failed
SCHEMA_RECHECK = 60.0  # seconds between looks at a schema older than this loopkit's
LEASE_RETRY = 1.0  # seconds between tries for a bot's lease held elsewhere

# A machine that writes a request is seen (``fleet status``), whether or not it runs a
# supervisor or ``serve`` (whose follower beats): one statement, a data-modifying CTE.
UPSERT = """
WITH seen AS (
  INSERT INTO loopkit_machines (machine, seen_at) VALUES (%(machine)s, now())
  ON CONFLICT (machine) DO UPDATE SET seen_at = now()
)
INSERT INTO loopkit_requests (machine, workspace, request_id, repo, status, updated_at, record)
VALUES (%(machine)s, %(workspace)s, %(request_id)s, %(repo)s, %(status)s, %(updated_at)s,
        %(record)s)
ON CONFLICT (machine, workspace, request_id) DO UPDATE SET
  repo = EXCLUDED.repo,
  updated_at = EXCLUDED.updated_at,
  record = CASE WHEN loopkit_requests.answer IS NULL THEN EXCLUDED.record
                ELSE loopkit_requests.record END,
  status = CASE WHEN loopkit_requests.answer IS NULL THEN EXCLUDED.status
                ELSE loopkit_requests.status END
"""
# The owner applied the answer written by another machine: its record says so now.
APPLIED = """
UPDATE loopkit_requests SET answer = NULL, record = %(record)s, status = %(status)s,
  updated_at = %(updated_at)s
WHERE machine = %(machine)s AND workspace = %(workspace)s AND request_id = %(request_id)s
"""
CLAIM = """
UPDATE loopkit_requests SET status = %(status)s, record = %(record)s,
  updated_at = %(updated_at)s, answered_at = now()
WHERE machine = %(machine)s AND workspace = %(workspace)s AND request_id = %(request_id)s
  AND status IN ('open', 'deferred') AND answer IS NULL
"""


def _row(machine_name: str, workspace: Workspace, record: Request) -> dict[str, Any]:
    return {
        "machine": machine_name,
        "workspace": str(workspace.root),
        "request_id": record.request_id,
        "repo": workspace.repo_name(),
        "status": record.status,
        "updated_at": record.updated_at,
        "record": Jsonb(record.to_dict()),
    }


class PgHub:
    def __init__(self, dsn: str) -> None:
        bridge()  # psycopg logs: its records go redacted where loopkit's go
        self.dsn = dsn
        self.machine = machine()
        self._warned = False
        self._retry_at = 0.0
        self._lock = threading.Lock()
        # One connection per process for the short statements (mirrors, claims, reads),
        # made on first use and dropped on a failure; the lease and the follower hold their
        # own. Reentrant: a claim may mirror.
        self._shared: psycopg.Connection[Any] | None = None
        self._use = threading.RLock()
        self._schema = 0  # the schema's version, as last read
        self._schema_at = float("-inf")  # when (monotonic; never: -inf)
        self._told_schema = False

    # --- connections ----------------------------------------------------------------------

    def connect(self, name: str = "loopkit") -> psycopg.Connection[Any] | None:
        """A connection, or None when the database cannot be reached (warned once). After a
        failure, no new try for :data:`QUIET_AFTER_FAILURE` seconds: an unreachable host
        costs one connect timeout, not one per write."""
        if time.monotonic() < self._retry_at:
            return None
        try:
            conn = psycopg.connect(
                self.dsn,
                connect_timeout=CONNECT_TIMEOUT,
                autocommit=True,
                application_name=name[:63],
                # No server-side prepared statements: a batch the server refused partway
                # (one unstorable row) leaves psycopg's cache naming one that does not exist.
                prepare_threshold=None,
            )
        except psycopg.Error as exc:
            self.down(exc)
            return None
        if self._warned:
            self._warned = False
            log.info("fleet_back", msg="fleet database reachable again")
        return conn

    def down(self, exc: BaseException) -> None:
        self._retry_at = time.monotonic() + QUIET_AFTER_FAILURE
        with self._lock:
            if self._warned:
                return
            self._warned = True
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log.warning(
            "fleet_down",
            msg=f"fleet database unreachable ({reason}): working on this machine alone; "
            "it syncs when the database is back",
        )

    def close(self) -> None:
        """Close the shared connection (the lease and the follower close their own)."""
        with self._use:
            if self._shared is not None:
                with contextlib.suppress(psycopg.Error):
                    self._shared.close()
                self._shared = None

    def _session(self) -> psycopg.Connection[Any] | None:
        """The shared connection (call with ``_use`` held), or None while the db is gone."""
        if self._shared is None or self._shared.closed:
            self._shared = self.connect()
        return self._shared

    def _failed(self, exc: BaseException) -> None:
        """The shared connection failed: drop it (the next use reconnects) and warn once."""
        if self._shared is not None:
            with contextlib.suppress(psycopg.Error):
                self._shared.close()
            self._shared = None
        self.down(exc)

    def ready(self, version: int) -> bool:
        """Whether the fleet's schema is at ``version`` or later. Read once, and again every
        :data:`SCHEMA_RECHECK` seconds while it is older (a machine upgraded before
        ``loopkit fleet init`` ran keeps sharing requests, and says once what to run); the
        database gone: False, at no cost (:meth:`connect` is quiet after a failure)."""
        if self._schema >= version:
            return True
        if time.monotonic() - self._schema_at < SCHEMA_RECHECK:
            return False
        with self._use:
            conn = self._session()
            if conn is None:
                return False
            try:
                self._schema = schema_version(conn)
            except psycopg.Error as exc:
                self._failed(exc)
                return False
        self._schema_at = time.monotonic()
        if self._schema < version:
            self.outdated(self._schema, version)
        return self._schema >= version

    @property
    def schema_read(self) -> bool:
        """Whether the schema's version was read (else :meth:`ready` said no for want of
        the database)."""
        return self._schema_at != float("-inf")

    def outdated(self, found: int, wanted: int) -> None:
        """Say once that the schema is older than this loopkit's (what is not shared yet)."""
        with self._lock:
            if self._told_schema:
                return
            self._told_schema = True
        log.warning(
            "fleet_schema_old",
            msg=f"the fleet schema is at version {found}, this loopkit needs {wanted} to share "
            "loop states and steering: run `loopkit fleet init` (requests are shared as before)",
        )

    def _run(self, sql: str, params: dict[str, Any] | tuple[Any, ...] = ()) -> list[Any] | None:
        with self._use:
            conn = self._session()
            if conn is None:
                return None
            try:
                cursor = conn.execute(sql, params)
                return cursor.fetchall() if cursor.description else []
            except psycopg.Error as exc:
                self._failed(exc)
                return None

    # --- the Hub ----------------------------------------------------------------------------

    def mirror(self, workspace: Workspace, record: Request) -> None:
        self._run(UPSERT, _row(self.machine, workspace, record))

    def mirror_applied(self, workspace: Workspace, record: Request) -> None:
        self._run(APPLIED, _row(self.machine, workspace, record))

    def claim(self, workspace: Workspace, record: Request) -> bool:
        """This machine's answer (or dismissal) of its own request: it wins unless another
        machine's answer came first (then RequestConflict; the follower applies that one).
        True: it stands fleet-wide. False, the database gone: it is recorded here and stands
        only if nobody answered elsewhere — the follower settles it by time when the
        database is back (SPEC §28: the answerer is told so, now and then)."""
        if record.status not in ("resolved", "dismissed"):
            return True  # a review's Defer is no answer: nothing to claim
        params = _row(self.machine, workspace, record)
        with self._use:
            conn = self._session()
            if conn is None:
                return False
            try:
                if conn.execute(CLAIM, params).rowcount == 1:
                    return True
                found = conn.execute(
                    "SELECT record, answer FROM loopkit_requests WHERE machine = %(machine)s "
                    "AND workspace = %(workspace)s AND request_id = %(request_id)s",
                    params,
                ).fetchone()
            except psycopg.Error as exc:
                self._failed(exc)
                return False
        if found is None:
            self.mirror(workspace, record)  # never mirrored (it was made while the db was gone)
            return True
        winner = Request.from_dict(found[1]["record"] if found[1] else found[0])
        if not winner.is_open:
            raise already_answered(winner)
        return True

    def remote_open(self) -> list[Remote]:
        rows = self._run(
            "SELECT machine, workspace, repo, record FROM loopkit_requests "
            "WHERE status IN ('open', 'deferred') AND machine <> %s ORDER BY updated_at",
            (self.machine,),
        )
        return [self._remote(row) for row in rows or [] if self._readable(row[3])]

    def find(self, request_id: str) -> Remote | None:
        rows = self._run(
            "SELECT machine, workspace, repo, COALESCE(answer->'record', record) "
            "FROM loopkit_requests WHERE request_id = %s AND machine <> %s LIMIT 1",
            (request_id, self.machine),
        )
        return self._remote(rows[0]) if rows and self._readable(rows[0][3]) else None

    @staticmethod
    def _readable(data: Any) -> bool:
        try:
            Request.from_dict(data)
        except Exception:
            return False
        return True

    @staticmethod
    def _remote(row: Any) -> Remote:
        return Remote(row[0], row[1], row[2], Request.from_dict(row[3]))

    def answer_remote(
        self, remote: Remote, reply: str, *, by: str, via: str, about: dict[str, Any] | None
    ) -> Answer:
        """Answer another machine's request: compare-and-set on its row, then NOTIFY."""
        result = self._on_row(
            remote,
            lambda r: apply_reply(r, reply, by=by, via=via, about=about),
            fix="answer it there, or when the database is back",
        )
        log.info(
            "fleet_answer",
            request_id=remote.record.request_id,
            msg=f"answered request {remote.record.request_id} of {remote.machine}",
        )
        return result

    def dismiss_remote(self, remote: Remote, *, by: str, via: str, reason: str | None) -> Request:
        """Dismiss another machine's request as :meth:`answer_remote` answers one; its owner
        applies it and lifts the request's own block (SPEC §16)."""

        def close(record: Request) -> Request:
            dismiss_record(record, by=by, via=via, reason=reason)
            return record

        record = self._on_row(
            remote, close, fix=f"dismiss it on {remote.machine}, or when the database is back"
        )
        log.info(
            "fleet_dismiss",
            request_id=remote.record.request_id,
            msg=f"dismissed request {remote.record.request_id} of {remote.machine}",
        )
        return record

    def _on_row(self, remote: Remote, change: Callable[[Request], T], *, fix: str) -> T:
        """``change`` another machine's request on its row (:meth:`_answer_row`); a database
        that cannot be reached is a conflict saying ``fix``."""
        unreachable = RequestConflict(
            f"request {remote.record.request_id} is on {remote.machine} and the fleet "
            f"database is unreachable: {fix}"
        )
        key = {
            "machine": remote.machine,
            "workspace": remote.workspace,
            "request_id": remote.record.request_id,
        }
        with self._use:
            conn = self._session()
            if conn is None:
                raise unreachable
            try:
                return self._answer_row(conn, key, change)
            except psycopg.Error as exc:
                self._failed(exc)
                raise unreachable from None

    def _answer_row(
        self, conn: psycopg.Connection[Any], key: dict[str, str], change: Callable[[Request], T]
    ) -> T:
        """In one transaction: lock the row, ``change`` the record (raising RequestConflict
        when it is closed), mark it answered, NOTIFY its owner."""
        with conn.transaction():
            row = conn.execute(
                "SELECT record, answer, status FROM loopkit_requests WHERE machine = "
                "%(machine)s AND workspace = %(workspace)s AND request_id = %(request_id)s "
                "FOR UPDATE",
                key,
            ).fetchone()
            if row is None:
                raise RequestConflict(f"request {key['request_id']} is gone from the fleet")
            record = Request.from_dict(row[1]["record"] if row[1] else row[0])
            if row[2] not in ("open", "deferred") and record.is_open:
                record.status = row[2]
            result = change(record)  # raises if closed
            record.updated_at = clock.later_than(record.updated_at)
            answer = {"record": record.to_dict(), "by_machine": self.machine}
            conn.execute(
                "UPDATE loopkit_requests SET status = %(status)s, answer = %(answer)s, "
                "answered_at = now() WHERE machine = %(machine)s AND workspace = %(workspace)s "
                "AND request_id = %(request_id)s",
                {**key, "status": record.status, "answer": Jsonb(answer)},
            )
            conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps(key)))
        return result

    def bot_lease(self, bot: str) -> Lease:
        return PgLease(self, bot)

    def offsets(self, token: str | None) -> Offsets:
        return PgOffsets(self, token)


class PgLease:
    """One poller per bot fleet-wide: ``pg_try_advisory_lock`` held on a connection of its
    own, so the lease goes the moment its holder dies (its connection with it); the others
    try every :data:`LEASE_RETRY` seconds. Database gone: the machine's ``flock`` lease."""

    def __init__(self, hub: PgHub, bot: str) -> None:
        self.hub = hub
        self.bot = bot
        self._conn: psycopg.Connection[Any] | None = None
        self._local: Lease | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None or (self._local is not None and self._local.held)

    def take(self) -> None:
        while True:
            conn = self.hub.connect(f"loopkit lease {self.bot} {self.hub.machine}")
            if conn is None:
                self._local = BotLease(self.bot)
                self._local.take()
                return
            try:
                row = conn.execute(
                    "SELECT pg_try_advisory_lock(hashtext(%s))", (f"loopkit-bot:{self.bot}",)
                ).fetchone()
            except psycopg.Error as exc:
                self.hub.down(exc)
                conn.close()
                continue
            if row and row[0]:
                self._conn = conn
                return
            conn.close()
            time.sleep(LEASE_RETRY)

    def release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._local is not None:
            self._local.release()
            self._local = None


class PgOffsets:
    """A bot's next update offset (with when its last update was seen) in
    ``loopkit_bot_offsets``, and the updates it handled in ``loopkit_bot_updates`` — so
    whichever machine takes the lease knows them — and the machine's own file for both, for
    when the database is gone. The lease's holder is the one writer: a saved offset is
    taken as it is, lower or not (after a quiet week Telegram's ids restart lower)."""

    def __init__(self, hub: PgHub, token: str | None) -> None:
        self.hub = hub
        self.file = OffsetFile(token)
        self.bot = self.file.bot

    def load(self) -> Position | None:
        rows = self.hub._run(
            # seen_at is empty only in a row a loopkit before it wrote: updated_at then.
            "SELECT next_offset, COALESCE(seen_at, updated_at) FROM loopkit_bot_offsets "
            "WHERE bot = %s",
            (self.bot,),
        )
        if not rows:
            return self.file.load()
        return Position(int(rows[0][0]), rows[0][1])

    def save(self, position: Position) -> None:
        self.file.save(position)
        self.hub._run(
            "INSERT INTO loopkit_bot_offsets (bot, next_offset, seen_at) VALUES (%s, %s, %s) "
            "ON CONFLICT (bot) DO UPDATE SET next_offset = EXCLUDED.next_offset, "
            "seen_at = EXCLUDED.seen_at, updated_at = now()",
            (self.bot, position.offset, position.seen_at),
        )

    def handled(self, keys: Collection[str]) -> set[str]:
        found = self.file.handled(keys)  # and those kept here while the database was gone
        rows = self.hub._run(
            "SELECT update_key FROM loopkit_bot_updates WHERE bot = %s AND update_key = ANY(%s)",
            (self.bot, list(keys)),
        )
        return found | {row[0] for row in rows or []}

    def mark(self, key: str, at: datetime) -> None:
        self.file.mark(key, at)
        self.hub._run(
            "WITH kept AS (INSERT INTO loopkit_bot_updates (bot, update_key, handled_at) "
            "VALUES (%(bot)s, %(key)s, %(at)s) ON CONFLICT DO NOTHING) "
            "DELETE FROM loopkit_bot_updates WHERE bot = %(bot)s AND handled_at < %(since)s",
            {"bot": self.bot, "key": key, "at": at, "since": at - KEEP_HANDLED},
        )
