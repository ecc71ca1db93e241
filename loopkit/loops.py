"""Every loop at a glance (SPEC section 22): ``loopkit ps`` and the inbox's Loops page.

One row per workspace registered in ``LOOPKIT_HOME`` — state, iteration, task, since when,
the last verify, the open question, the spend, a pause or notes waiting — read from the
files each loop keeps (``.loopkit/state.json``, ``BLOCKED.md``, ``.loopkit/control/``),
never from a lock: asking about fifty loops every second must not get in a starting
supervisor's way.

The state, first match wins:

- ``blocked``: ``BLOCKED.md`` stands (supervised or not: a human answers either way);
- ``paused``: the supervisor runs and waits on a pause (never a block: no question is open);
- ``running``: the supervisor runs;
- ``dead``: it was running (or blocked, or paused) and its pid is gone — or is another
  process now (checked against the start time it recorded): killed, crashed, rebooted;
- ``finished``: the ``done`` command said so;
- ``stopped``: it ended otherwise (a stop, a signal, ``--max-iterations``, an abort) or never
  ran here.

With a fleet, other machines' loops are listed too — but only those waiting on a human:
the fleet shares requests, not loop states, so another machine's open block is a
``blocked`` row (its question, its machine) and its running, paused or finished loops are
not seen from here. Another machine's loop is steered on that machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from loopkit import clock, liveness, readfile
from loopkit import config as config_mod
from loopkit.errors import EXIT_BLOCKED, LoopkitError
from loopkit.escalation import marker
from loopkit.home import Registered, Registry, workspace_id
from loopkit.message import age, fold
from loopkit.workspace import Workspace
from loopkit.workspace.state import State, StateFile
from loopkit.workspace.steer import Command, Notes, Steering

if TYPE_CHECKING:
    from loopkit.requests.hub import Remote

ALIVE = ("running", "blocked", "paused")  # what state.json says while a supervisor runs
COST_KEYS = ("total_cost_usd", "cost_usd", "spend_usd")  # state.json keys that may carry spend


@dataclass(frozen=True, slots=True)
class Loop:
    """One loop, as ``ps --json`` and the Loops page show it."""

    key: str  # the workspace's id in the registry (URLs use it)
    repo: str
    workspace: str
    machine: str | None  # None: this machine
    state: str
    pid: int | None
    iteration: int
    task: str | None
    since: str | None  # ISO-8601 UTC: when the loop got into ``state``
    last_verify: dict[str, Any] | None  # {"ok", "line", "at"}
    question: str | None  # the open block's question
    request_id: str | None
    spend_usd: float | None  # summed from Claude's results, when the loop records it
    paused_by: str | None  # "by via at" of the pause in force
    guidance_pending: int  # notes waiting for the next agent run
    problem: str | None = None  # why the row is incomplete (state.json unreadable, …)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_loop(registered: Registered) -> Loop:
    """The row of one registered workspace (a file that cannot be read makes a row that
    says so, never a failed ``ps``)."""
    root = registered.path
    workspace, problem = _workspace_at(root)
    try:
        state = StateFile(workspace).load()
    except LoopkitError as exc:
        state, problem = State(), str(exc)
    steering = Steering(workspace)
    paused = steering.paused()
    alive = state.status in ALIVE and liveness.alive(state.pid, state.pid_start)
    blocked = os.path.lexists(workspace.blocked)  # a file, or something in its way
    since = state.updated_at
    request_id, question = state.open_request, None
    if blocked:
        shown = "blocked"
        request_id = request_id or marker.request_id_of(str(workspace.blocked))
        question, since = _question(workspace, request_id)
    elif alive and state.status == "paused":
        shown, since = "paused", paused.at if paused else since
    elif alive:
        shown, since = "running", state.started_at
    elif state.status == "blocked" and state.last_exit == EXIT_BLOCKED:
        shown = "stopped"  # `run --exit-on-block` ended on a block that is gone now (run.sh)
    elif state.status in ALIVE:
        shown = "dead"
    elif state.status == "finished":
        shown = "finished"
    else:
        shown = "stopped"
    if not blocked:
        request_id = None
    return Loop(
        key=workspace_id(root),
        repo=registered.repo,
        workspace=str(root),
        machine=None,
        state=shown,
        pid=state.pid if alive else None,
        iteration=state.iteration,
        task=state.task,
        since=since,
        last_verify=state.last_verify,
        question=question,
        request_id=request_id,
        spend_usd=_spend(state),
        paused_by=paused.line() if paused else None,
        guidance_pending=Notes(workspace).count(),
        problem=problem,
    )


def _workspace_at(root: Path) -> tuple[Workspace, str | None]:
    """The workspace at ``root``; its configuration is read only when it moves the block
    file (``[escalation] blocked_file``): fifty TOML parses would be half of ``ps``."""
    try:
        text = readfile.read_text(root / config_mod.CONFIG_NAME, errors="replace")
    except OSError:
        text = ""
    if "blocked_file" not in text:
        return Workspace(root, root / "BLOCKED.md"), None
    try:
        return Workspace.of(config_mod.load(root, lenient=True)), None
    except LoopkitError as exc:
        return Workspace(root, root / "BLOCKED.md"), str(exc)


def _question(workspace: Workspace, request_id: str | None) -> tuple[str | None, str | None]:
    """The open block's question and since when it was asked (else BLOCKED.md's time)."""
    if request_id:
        with contextlib.suppress(OSError, ValueError):
            data = readfile.json_document(
                readfile.read_text(workspace.requests_dir / f"{request_id}.json")
            )
            if isinstance(data, dict):
                asked = data.get("raised_at") or data.get("created_at")  # as Request.asked_at
                return str(data.get("prompt") or ""), str(asked) if asked else None
    with contextlib.suppress(OSError):
        mtime = os.lstat(workspace.blocked).st_mtime
        return None, clock.iso_seconds(datetime.fromtimestamp(mtime, clock.now().tzinfo))
    return None, None


def _spend(state: State) -> float | None:
    for key in COST_KEYS:
        value = state.extra.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def loops(registry: Registry | None = None) -> list[Loop]:
    """Every loop registered on this machine, oldest registration first."""
    return [read_loop(entry) for entry in (registry or Registry()).workspaces()]


class RemoteRequests(Protocol):
    """What :func:`remote_loops` needs of :class:`~loopkit.fleet.Hubs`."""

    def remote_open(self) -> list[Remote]: ...


def remote_key(machine: str, workspace: str) -> str:
    """Another machine's workspace in a URL (the inbox's ``/r/<key>/<id>``)."""
    return "m" + hashlib.sha256(f"{machine}\n{workspace}".encode()).hexdigest()[:15]


def remote_loops(hubs: RemoteRequests) -> list[Loop]:
    """Other machines' loops that wait on a human: one ``blocked`` row per workspace with an
    open block in the fleet (its oldest question)."""
    rows: dict[tuple[str, str], Loop] = {}
    for remote in sorted(hubs.remote_open(), key=lambda r: r.record.asked_at):
        record = remote.record
        where = (remote.machine, remote.workspace)
        if not (record.is_open and record.has_own_block) or where in rows:
            continue
        rows[where] = Loop(
            key=remote_key(remote.machine, remote.workspace), repo=remote.repo,
            workspace=remote.workspace, machine=remote.machine, state="blocked", pid=None,
            iteration=record.iteration or 0, task=record.task, since=record.asked_at,
            last_verify=None, question=record.prompt, request_id=record.request_id,
            spend_usd=None, paused_by=None, guidance_pending=0,
        )  # fmt: skip
    return list(rows.values())


def all_loops() -> list[Loop]:
    """This machine's loops and — when ``LOOPKIT_FLEET_DSN`` names a fleet — other machines'
    waiting on a human (the fleet's libraries load only then)."""
    found = loops()
    if os.environ.get("LOOPKIT_FLEET_DSN", "").strip():
        from loopkit.fleet import Hubs

        hubs = Hubs()
        try:
            found += remote_loops(hubs)
        finally:
            hubs.close()
    return found


def find(name: str, found: list[Loop]) -> list[Loop]:
    """The loops ``name`` means: a repo name, a workspace path, or a registry key."""
    path = str(Path(name).expanduser().absolute()) if "/" in name or name == "." else None
    return [
        one
        for one in found
        if name in (one.repo, one.key) or (path is not None and one.workspace == path)
    ]


def since_text(loop: Loop) -> str:
    if not loop.since:
        return ""
    with contextlib.suppress(ValueError):
        return age((clock.now() - clock.parse_iso(loop.since)).total_seconds())
    return ""


def verify_text(loop: Loop) -> str:
    verify = loop.last_verify
    if not verify:
        return ""
    line = f": {fold(str(verify.get('line') or ''), 50)}" if verify.get("line") else ""
    return ("pass" if verify.get("ok") else "fail") + line


def render(found: list[Loop]) -> str:
    if not found:
        return "no loops registered on this machine (`loopkit run` registers one)"
    rows = [("REPO", "STATE", "ITER", "SINCE", "TASK", "VERIFY", "SPEND")]
    notes: list[str] = []
    for one in found:
        spend = f"${one.spend_usd:.2f}" if one.spend_usd is not None else ""
        rows.append(
            (
                one.repo,
                one.state,
                str(one.iteration),
                since_text(one),
                fold(one.task or "", 40),
                verify_text(one),
                spend,
            )
        )
        if one.question:
            notes.append(f"{one.repo}: Q: {fold(one.question, 100)}")
        if one.paused_by:
            notes.append(f"{one.repo}: {one.paused_by}")
        if one.guidance_pending:
            notes.append(f"{one.repo}: {one.guidance_pending} note(s) for the next agent run")
        if one.problem:
            notes.append(f"{one.repo}: {one.problem}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]  # fmt: skip
    return "\n".join(lines + notes)


def _workspace(loop: Loop) -> Workspace:
    root = Path(loop.workspace)
    return Workspace(root, root / "BLOCKED.md")  # steering needs only its .loopkit/


def steer(loop: Loop, command: Command, *, by: str, via: str) -> str:
    """Give ``command`` to ``loop`` (recorded with who, via and when); what happened, in one
    line. A stop reaches only a running supervisor: with none, nothing is written."""
    if command == "stop" and loop.pid is None:
        return f"{loop.repo} is not running ({loop.state}): nothing to stop"
    order = Steering(_workspace(loop)).give(command, by=by, via=via)
    running = loop.pid is not None
    if command == "pause":
        then = "after its running iteration" if running else "at its next `loopkit run`"
        return f"{loop.repo}: paused ({order.line()}); it waits {then} until resumed"
    if command == "resume":
        return f"{loop.repo}: resumed ({order.line()})"
    return f"{loop.repo}: stopping ({order.line()})"


def note(loop: Loop, text: str, *, by: str, via: str) -> str:
    """Guidance for ``loop``'s next agent run (``LOOPKIT_GUIDANCE``), once."""
    Notes(_workspace(loop)).add(text, by=by, via=via)
    return f"{loop.repo}: noted for its next agent run"


def print_loops(*, as_json: bool) -> int:
    """``loopkit ps`` (its fast path, and the click command's body): exit 0."""
    found = all_loops()
    if as_json:
        import json

        text = json.dumps([one.to_dict() for one in found], ensure_ascii=False)
    else:
        text = render(found)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `loopkit ps | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
