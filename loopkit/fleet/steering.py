"""Steering another machine's loop through the fleet (SPEC section 22): a pause, resume,
stop or note given on one machine lands on the loop's own.

- :func:`give` (on any machine): one row in ``loopkit_steer`` — the loop (machine,
  workspace), the command or the note's text, who, via which surface, from which machine —
  and ``NOTIFY loopkit_steer``, in one statement. Only a loop the fleet knows (a row in
  ``loopkit_loops``, or a request in ``loopkit_requests``) takes one.
- :func:`apply_pending` (on the loop's machine, by its follower: at the NOTIFY, and each
  beat for one a lost connection missed): the machine's orders not yet applied, oldest
  first, each in a transaction of its own — locked (``FOR UPDATE SKIP LOCKED``: two
  followers of one machine — ``serve`` and a supervisor — never both take one), landed as
  the file the local path writes (``.loopkit/control/steer.json``, or a note under
  ``control/notes/``) with the same event (who, via, when, and the machine it was given
  on), marked applied with its outcome, and committed before the next is taken: a
  connection lost partway leaves the orders already landed marked. A follower takes only
  orders for the workspaces it steers (two followers of one database, its DSN spelled two
  ways, each take their own); an order for a workspace not registered on the machine at
  all is marked refused, never written.
- **Stamped when given.** A landed order's ``at`` is when it was given (its age by the
  database's clock, taken from this machine's now), never when it landed: a supervisor
  drops a stop given before it started, however late the stop lands; of two commands, the
  one given later stands.
- **Each order lands once.** Its file carries the order's key (its id and the time it was
  given): a note of that key already waiting (or taken by the last agent run), or a
  ``steer.json`` holding that order, is not written again — so even a crash between the
  file and the commit lands nothing twice at the next look.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from loopkit import clock
from loopkit.errors import LoopkitError
from loopkit.fleet.schema import LOOPS_VERSION
from loopkit.log import get_logger
from loopkit.workspace.steer import COMMANDS, Notes, Steering

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection, Mapping
    from datetime import datetime
    from typing import Any

    from loopkit.fleet.pg import PgHub
    from loopkit.workspace import Workspace
    from loopkit.workspace.steer import Order

log = get_logger("loopkit.fleet")

CHANNEL = "loopkit_steer"
Given = Literal["given", "unknown", "unreachable", "outdated"]

GIVE = f"""
WITH given AS (
  INSERT INTO loopkit_steer (machine, workspace, command, note, given_by, via, from_machine)
  SELECT %(machine)s, %(workspace)s, %(command)s, %(note)s, %(by)s, %(via)s, %(from)s
  WHERE EXISTS (SELECT 1 FROM loopkit_loops
                WHERE machine = %(machine)s AND workspace = %(workspace)s)
     OR EXISTS (SELECT 1 FROM loopkit_requests
                WHERE machine = %(machine)s AND workspace = %(workspace)s)
  RETURNING id, machine
)
SELECT id, pg_notify('{CHANNEL}', machine)::text FROM given
"""
PENDING = """
SELECT id, workspace, command, note, given_by, via, from_machine,
       (extract(epoch FROM given_at) * 1000000)::bigint,
       extract(epoch FROM clock_timestamp() - given_at)::float8
FROM loopkit_steer
WHERE machine = %(machine)s AND applied_at IS NULL
  AND (workspace = ANY(%(mine)s) OR NOT workspace = ANY(%(registered)s))
ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
"""
DONE = "UPDATE loopkit_steer SET applied_at = now(), outcome = %s WHERE id = %s"


def give(
    hub: PgHub,
    *,
    machine: str,
    workspace: str,
    command: str,
    note: str | None,
    by: str,
    via: str,
) -> Given:
    """Give ``command`` (``note``: its text) to the loop at ``workspace`` on ``machine``:
    ``given``, ``unknown`` (the fleet knows no such loop), ``unreachable`` (the database is
    gone: nothing was written) or ``outdated`` (the schema predates steering)."""
    if not hub.ready(LOOPS_VERSION):
        return "outdated" if hub.schema_read else "unreachable"
    rows = hub._run(GIVE, {"machine": machine, "workspace": workspace, "command": command,
                           "note": note, "by": by, "via": via, "from": hub.machine})  # fmt: skip
    if rows is None:
        return "unreachable"
    return "given" if rows else "unknown"


def apply_pending(
    conn: Any, machine: str, places: Mapping[str, Workspace],
    registered: Collection[str] | None = None,
) -> list[str]:  # fmt: skip
    """Land this machine's orders not yet applied for ``places`` (the registered workspaces
    this follower steers, by path), each committed on its own; the workspaces it touched.
    An order for a workspace not ``registered`` on this machine at all (default: none but
    ``places``) is refused; one for a workspace another follower steers (its configuration
    names this database otherwise) is left to it. A psycopg error goes to the caller: the
    orders landed before it stay marked applied, the one it interrupted is landed (once) at
    the next look."""
    mine = list(places)
    query = {"machine": machine, "mine": mine,
             "registered": mine if registered is None else list(registered)}  # fmt: skip
    touched: list[str] = []
    while True:
        with conn.transaction():
            row = conn.execute(PENDING, query).fetchone()
            if row is None:
                return touched
            order_id, where, command, note, by, via, given_on, given_us, age = row
            key = _key(order_id, given_us)
            # When it was given, on this machine's clock: its age by the database's clock
            # (the giver's clock, and how the two differ, never matter).
            given = clock.now() - timedelta(seconds=max(0.0, float(age)))
            outcome = _land(places.get(where), command, note, by=by, via=via, given_on=given_on,
                            key=key, given=given)  # fmt: skip
            conn.execute(DONE, (outcome, order_id))
        if outcome == "applied":
            touched.append(where)
        log.info(
            "fleet_steer",
            command=command,
            by=by,
            via=via,
            given_on=given_on,
            msg=f"fleet: {command} for {where} by {by} via {via} on {given_on}: {outcome}",
        )


def _land(
    workspace: Workspace | None, command: str, note: str | None, *, by: str, via: str,
    given_on: str, key: str, given: datetime,
) -> str:  # fmt: skip
    """Write one order (``key``: the fleet's key of it; ``given``: when) as the local path
    does, unless it was written already, stamped with the time it was given; its outcome in
    a few words. A pause, resume or stop older than the command ``steer.json`` holds was
    overtaken by it: it is not written (the latest given stands, whatever the order they
    land in)."""
    if workspace is None:
        return "refused: no such workspace is registered on this machine"
    try:
        if command == "note":
            notes = Notes(workspace)
            if not notes.landed(key):
                notes.add(note or "", by=by, via=via, given_on=given_on, order=key, given=given)
        elif command in COMMANDS:
            steering = Steering(workspace)
            latest = steering.latest()
            if latest is not None and latest.order != key and _later(latest, key, given):
                return f"overtaken: {latest.line()} came later"
            if latest is None or latest.order != key:
                steering.give(command, by=by, via=via, given_on=given_on, order=key, given=given)
        else:
            return f"refused: unknown command {command!r}"
    except LoopkitError as exc:
        return f"failed: {exc}"
    return "applied"


def _key(order_id: int, given_us: int) -> str:
    return f"o{order_id}-{given_us}"


def _given(key: str) -> tuple[int, int] | None:
    """An order's key as (when given, in µs on the database's clock; its id), or None."""
    head, _, given_us = key.partition("-")
    try:
        return int(given_us), int(head.removeprefix("o"))
    except ValueError:
        return None


def _later(latest: Order, key: str, given: datetime) -> bool:
    """Whether ``latest`` (what ``steer.json`` holds) was given after the order ``key``
    (given at ``given``): two orders of the fleet by the database's clock (to the
    microsecond, then their ids), one given here by this machine's."""
    theirs = _given(latest.order) if latest.order else None
    ours = _given(key)
    if theirs is not None and ours is not None:
        return theirs > ours
    return latest.at > clock.iso_millis(given)
