"""Steering another machine's loop through the fleet (SPEC section 22): a pause, resume,
stop or note given on one machine lands on the loop's own.

- :func:`give` (on any machine): one row in ``loopkit_steer`` — the loop (machine,
  workspace), the command or the note's text, who, via which surface, from which machine —
  and ``NOTIFY loopkit_steer``, in one statement. Only a loop the fleet knows (a row in
  ``loopkit_loops``, or a request in ``loopkit_requests``) takes one.
- :func:`apply_pending` (on the loop's machine, by its follower: at the NOTIFY, and each
  beat for one a lost connection missed): in one transaction the machine's orders not yet
  applied are locked (``FOR UPDATE SKIP LOCKED``: two followers of one machine — ``serve``
  and a supervisor — never both take one); each lands as the file the local path writes
  (``.loopkit/control/steer.json``, or a note under ``control/notes/``), with the same event
  (who, via, when, and the machine it was given on), and is marked applied with its outcome.
  An order for a workspace not registered on the machine is marked refused, never written.
  Each order lands once: only a crash between its file and the commit would land it again,
  at the next look.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from loopkit.errors import LoopkitError
from loopkit.fleet.pg import PgHub
from loopkit.fleet.schema import LOOPS_VERSION
from loopkit.log import get_logger
from loopkit.workspace import Workspace
from loopkit.workspace.steer import COMMANDS, Notes, Steering

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
SELECT id, workspace, command, note, given_by, via, from_machine FROM loopkit_steer
WHERE machine = %s AND applied_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED
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


def apply_pending(conn: Any, machine: str, places: Mapping[str, Workspace]) -> list[str]:
    """Land this machine's orders not yet applied (``places``: the registered workspaces
    this fleet steers, by path); the workspaces it touched. A psycopg error goes to the
    caller, with nothing marked applied."""
    touched: list[str] = []
    with conn.transaction():
        for order_id, where, command, note, by, via, given_on in conn.execute(
            PENDING, (machine,)
        ).fetchall():
            outcome = _land(places.get(where), command, note, by=by, via=via, given_on=given_on)
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
    return touched


def _land(
    workspace: Workspace | None, command: str, note: str | None, *, by: str, via: str,
    given_on: str,
) -> str:  # fmt: skip
    """Write one order as the local path does; its outcome in a few words."""
    if workspace is None:
        return "refused: no such workspace is registered on this machine"
    try:
        if command == "note":
            Notes(workspace).add(note or "", by=by, via=via, given_on=given_on)
        elif command in COMMANDS:
            Steering(workspace).give(command, by=by, via=via, given_on=given_on)
        else:
            return f"refused: unknown command {command!r}"
    except LoopkitError as exc:
        return f"failed: {exc}"
    return "applied"
