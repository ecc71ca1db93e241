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

With a fleet, every other machine's loops are listed too, with their ``machine``: each
machine publishes the rows it reads here to the fleet (:mod:`loopkit.fleet.states`), so this
machine's loops come from its files and the others' from the fleet — never both. A row
whose machine has not refreshed it for a few beats while it said a supervisor runs is
``unknown`` (a blocked one stays ``blocked``: its question is still open), with how long
the fleet has not heard from it in ``problem``; ``heard_at`` says when it last did. An open
block another machine mirrored to the fleet shows as ``blocked`` even before (or without)
its machine's row.

A loop is named by its repo, its workspace path, its registry key, or ``MACHINE:REPO``
(MACHINE as ``ps`` shows it, or its host name alone) when two machines have a repo of that
name. Another machine's loop is steered through the fleet
(:mod:`loopkit.fleet.steering`): its own machine writes the same files the local path
writes, with the same events.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from datetime import datetime
from pathlib import Path

from loopkit import clock, liveness, readfile
from loopkit import config as config_mod
from loopkit.datarecord import asdict, record, replace
from loopkit.errors import EXIT_BLOCKED, LoopkitError, LoopNotFound, UsageError
from loopkit.escalation import marker
from loopkit.home import Registry, machine, sha256_hex, workspace_id
from loopkit.message import age, fold
from loopkit.workspace import Workspace
from loopkit.workspace import live as live_file
from loopkit.workspace.state import ALIVE, State, StateFile
from loopkit.workspace.steer import Notes, Says, Steering

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.fleet import LoopRows
    from loopkit.home import Registered
    from loopkit.requests.hub import Remote
    from loopkit.workspace.steer import Command, Said


@record(frozen=True, slots=True)
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
    spend_usd: float | None  # what the agent's runs reported spending, as the loop recorded it
    paused_by: str | None  # "by via at" of the pause in force
    guidance_pending: int  # notes waiting for the next agent run
    problem: str | None = None  # why the row is incomplete (state.json unreadable, …)
    heard_at: str | None = None  # another machine's loop: when the fleet last heard of it
    # The agent's running turn (SPEC §24, .loopkit/live.json): the tool it runs, its input,
    # since when, its last words, turns, calls, tokens, spend. None: no turn runs (or
    # another machine's loop: the fleet does not carry it).
    live: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def where(self) -> str:
        """The loop's name with its machine, for a human: ``shop-api`` or ``shop-api on b-1``."""
        return f"{self.repo} on {self.machine}" if self.machine else self.repo


def read_loop(registered: Registered, *, exiting: int | None = None) -> Loop:
    """The row of one registered workspace (a file that cannot be read makes a row that
    says so, never a failed ``ps``). ``exiting``: a pid read as gone — the supervisor's own
    as it ends, so its last row says what ``ps`` reads once it has (``dead`` after a crash
    that left ``running`` in state.json)."""
    root = registered.path
    workspace, problem = _workspace_at(root)
    try:
        state = StateFile(workspace).load()
    except LoopkitError as exc:
        state, problem = State(), str(exc)
    steering = Steering(workspace)
    paused = steering.paused()
    alive = (
        state.status in ALIVE
        and (exiting is None or state.pid != exiting)
        and liveness.alive(state.pid, state.pid_start)
    )
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
        live=live_file.read(workspace, state.pid) if alive else None,
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
    """The spend the supervisor recorded (``state.json``'s ``spend_usd``); None when no run
    reported any, or the field is not a number (a hand-edited file)."""
    value = state.spend_usd
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def loops(registry: Registry | None = None) -> list[Loop]:
    """Every loop registered on this machine, oldest registration first."""
    return [read_loop(entry) for entry in (registry or Registry()).workspaces()]


def describe(registered: Registered, /, *, exiting: int | None = None) -> dict[str, Any]:
    """One registered loop's row as the fleet publishes it (:mod:`loopkit.fleet.states`)."""
    return read_loop(registered, exiting=exiting).to_dict()


if TYPE_CHECKING:
    from typing import Protocol

    class Fleet(Protocol):
        """What the loops of other machines need of :class:`~loopkit.fleet.Hubs`: their rows,
        their open requests, and a way to steer them."""

        def remote_open(self) -> list[Remote]: ...
        def remote_loop_rows(self) -> LoopRows: ...
        def steer_remote(
            self, machine: str, workspace: str, command: str, note: str | None, *, by: str, via: str
        ) -> None: ...


def remote_key(machine: str, workspace: str) -> str:
    """Another machine's workspace in a URL (the inbox's ``/r/<key>/<id>``)."""
    return "m" + sha256_hex(f"{machine}\n{workspace}")[:15]


def remote_loops(fleet: Fleet) -> list[Loop]:
    """Other machines' loops: each as its machine published it, and each workspace with an
    open block in the fleet as ``blocked`` with its oldest question (whether or not its
    machine published a row for it)."""
    return _remote_loops(fleet).loops


@record(frozen=True, slots=True)
class Listing:
    """Loops as listed, and whether a fleet's database could not be reached for other
    machines' (``unreached``: some may be missing)."""

    loops: list[Loop]
    unreached: bool = False


def _remote_loops(fleet: Fleet) -> Listing:
    published = fleet.remote_loop_rows()
    rows = {(one.machine, one.workspace): one for one in map(_published, published.rows)}
    blocks: dict[tuple[str | None, str], Loop] = {}
    for remote in sorted(fleet.remote_open(), key=lambda r: r.record.asked_at):
        record = remote.record
        where = (remote.machine, remote.workspace)
        if not (record.is_open and record.has_own_block) or where in blocks:
            continue
        row = rows.get(where)
        if row is not None:  # its machine's row, with the question the fleet holds
            since = row.since if row.state == "blocked" else record.asked_at
            blocks[where] = replace(row, state="blocked", question=record.prompt,
                                    request_id=record.request_id, since=since)  # fmt: skip
            continue
        blocks[where] = Loop(
            key=remote_key(remote.machine, remote.workspace), repo=remote.repo,
            workspace=remote.workspace, machine=remote.machine, state="blocked", pid=None,
            iteration=record.iteration or 0, task=record.task, since=record.asked_at,
            last_verify=None, question=record.prompt, request_id=record.request_id,
            spend_usd=None, paused_by=None, guidance_pending=0,
        )  # fmt: skip
    merged = {**rows, **blocks}
    ordered = sorted(merged.values(), key=lambda one: (one.machine or "", one.repo, one.workspace))
    return Listing(ordered, published.unreached)


def _published(data: dict[str, Any]) -> Loop:
    """A row another machine published; stale (its machine not heard from for a few beats
    while it said a supervisor runs): ``unknown``, or still ``blocked``, and why."""
    state, pid, problem = str(data["state"]), data.get("pid"), data.get("problem")
    machine_name = str(data["machine"])
    if data.get("stale") and state in ALIVE:
        heard = age(float(data.get("heard_seconds") or 0))
        problem = (f"no word from {machine_name} for {heard} (it said {state}): that machine "
                   "is off, or cannot reach the fleet database")  # fmt: skip
        pid = None
        state = "blocked" if state == "blocked" else "unknown"
    verify = data.get("last_verify")
    spend = data.get("spend_usd")
    return Loop(
        key=remote_key(machine_name, str(data["workspace"])), repo=str(data["repo"]),
        workspace=str(data["workspace"]), machine=machine_name, state=state,
        pid=int(pid) if isinstance(pid, int) else None, iteration=int(data.get("iteration") or 0),
        task=data.get("task"), since=data.get("since"),
        last_verify=verify if isinstance(verify, dict) else None,
        question=data.get("question"), request_id=data.get("request_id"),
        spend_usd=float(spend) if isinstance(spend, int | float) else None,
        paused_by=data.get("paused_by"), guidance_pending=int(data.get("guidance_pending") or 0),
        problem=problem, heard_at=data.get("heard_at"),
    )  # fmt: skip


def all_loops(fleet: Fleet | None = None) -> list[Loop]:
    """This machine's loops and — given a ``fleet`` — every other machine's."""
    return listing(fleet).loops


def listing(fleet: Fleet | None = None) -> Listing:
    """:func:`all_loops`, and whether a fleet's database could not be reached for them."""
    found = loops()
    if fleet is None:
        return Listing(found)
    remote = _remote_loops(fleet)
    return Listing(found + remote.loops, remote.unreached)


def find(name: str, found: list[Loop]) -> list[Loop]:
    """The loops ``name`` means: a registry key, a workspace path, a repo name — or, when
    none is, ``MACHINE:REPO``, where MACHINE is a machine's name as ``ps`` shows it (this
    machine's own for its loops) or its host name alone."""
    path = str(Path(name).expanduser().absolute()) if "/" in name or name == "." else None
    direct = [
        one
        for one in found
        if name in (one.repo, one.key) or (path is not None and one.workspace == path)
    ]
    where, colon, repo = name.partition(":")
    if direct or not colon or not where or not repo:
        return direct
    here = machine()
    return [one for one in found if one.repo == repo and where in _names(one.machine or here)]


def _names(machine_name: str) -> tuple[str, str]:
    """A machine's names: its own (``host-1a2b3c4d``) and its host's (``host``)."""
    return machine_name, machine_name.rsplit("-", 1)[0]


def address(loop: Loop) -> str:
    """The ``MACHINE:REPO`` that names ``loop`` when its repo alone is not enough."""
    return f"{loop.machine or machine()}:{loop.repo}"


def pick(name: str, found: list[Loop]) -> Loop:
    """The one loop ``name`` names (:func:`find`); LoopNotFound — with the loops to choose
    from, or the ``MACHINE:REPO`` names when two machines share the name — otherwise."""
    matches = find(name, found)
    if len(matches) == 1:
        return matches[0]
    if matches:
        machines = {one.machine for one in matches}
        if len(machines) > 1:
            names = ", ".join(address(one) for one in matches)
            raise LoopNotFound(f"{name!r} names {len(matches)} loops on different machines; "
                               f"say which: {names}")  # fmt: skip
        paths = ", ".join(one.workspace for one in matches)
        raise LoopNotFound(
            f"{name!r} names {len(matches)} loops ({paths}); give the workspace path"
        )
    fleet = any(one.machine for one in found)
    names = ", ".join(sorted({one.where for one in found})) or "none registered"
    where = "on this machine or in the fleet" if fleet else "on this machine"
    raise LoopNotFound(f"no loop named {name!r} {where}; the loops: {names} (`loopkit ps`)")


def since_text(loop: Loop) -> str:
    if not loop.since:
        return ""
    with contextlib.suppress(ValueError):
        return age((clock.now() - clock.parse_iso(loop.since)).total_seconds())
    return ""


def _ago(stamp: object, now: datetime | None = None) -> str | None:
    if not isinstance(stamp, str):
        return None
    try:
        return age(((now or clock.now()) - clock.parse_iso(stamp)).total_seconds())
    except ValueError:
        return None


def tool_text(tool: dict[str, Any]) -> str:
    """A running call as a human reads it: its tool and what it runs (a command in full,
    up to a line), else its path, else its input."""
    given = tool.get("input")
    shown: object = given
    if isinstance(given, dict):
        shown = next((given[k] for k in ("command", "cmd", "file_path", "notebook_path", "path",
                                         "pattern", "url", "query")
                      if isinstance(given.get(k), str)), given)  # fmt: skip
    if not isinstance(shown, str):
        shown = json.dumps(shown, ensure_ascii=False)
    return f"{tool.get('name') or '?'}: {shown}"


def live_line(running: dict[str, Any], width: int = 120, *, now: datetime | None = None) -> str:
    """The running turn on one line: ``▶ Bash: pytest -x (for 12s) · turn 4, 7 calls ·
    12k tokens · $0.31``, or, between calls, ``thinking (12s since its last event)``."""
    tool = running.get("tool")
    if isinstance(tool, dict):
        since = _ago(tool.get("since"), now)
        head = f"▶ {fold(tool_text(tool), width)}" + (f" (for {since})" if since else "")
    else:
        quiet = _ago(running.get("event_at"), now)
        head = "▷ between calls" + (f" ({quiet} since its last event)" if quiet else "")
    counts = []
    if isinstance(running.get("turns"), int) and running["turns"]:
        counts.append(f"turn {running['turns']}")
    if isinstance(running.get("calls"), int):
        counts.append(f"{running['calls']} call{'s' if running['calls'] != 1 else ''}")
    tokens = running.get("tokens")
    if isinstance(tokens, dict):
        total = sum(v for v in tokens.values() if isinstance(v, int))
        if total:
            counts.append(f"{total / 1000:.1f}k tokens" if total >= 1000 else f"{total} tokens")
    if isinstance(running.get("spend_usd"), int | float):
        counts.append(f"${running['spend_usd']:.2f}")
    if running.get("runaway"):
        counts.append(f"stopping: {running['runaway'].get('trigger')}")
    return " · ".join([head, *([", ".join(counts)] if counts else [])])


def said_line(running: dict[str, Any], width: int = 100) -> str | None:
    """The agent's last words, on one line (None: it said nothing yet)."""
    text = running.get("text")
    return f'said: "{fold(text, width)}"' if isinstance(text, str) and text else None


def verify_text(loop: Loop) -> str:
    verify = loop.last_verify
    if not verify:
        return ""
    line = f": {fold(str(verify.get('line') or ''), 50)}" if verify.get("line") else ""
    return ("pass" if verify.get("ok") else "fail") + line


def render(found: list[Loop]) -> str:
    """The table ``ps`` prints: one line per loop (a MACHINE column when another machine's
    are listed; this machine's are ``here``), then a line for each question, pause, notes
    waiting and problem."""
    if not found:
        return "no loops registered on this machine (`loopkit run` registers one)"
    fleet = any(one.machine for one in found)
    rows = [("REPO", *(("MACHINE",) if fleet else ()), "STATE", "ITER", "SINCE", "TASK",
             "VERIFY", "SPEND")]  # fmt: skip
    notes: list[str] = []
    for one in found:
        spend = f"${one.spend_usd:.2f}" if one.spend_usd is not None else ""
        on = (one.machine or "here",) if fleet else ()
        rows.append((one.repo, *on, one.state, str(one.iteration), since_text(one),
                     fold(one.task or "", 40), verify_text(one), spend))  # fmt: skip
        name = one.where
        if one.live:
            notes.append(f"{name}: {live_line(one.live)}")
        if one.question:
            notes.append(f"{name}: Q: {fold(one.question, 100)}")
        if one.paused_by:
            notes.append(f"{name}: {one.paused_by}")
        if one.guidance_pending:
            notes.append(f"{name}: {one.guidance_pending} note(s) for the next agent run")
        if one.problem:
            notes.append(f"{name}: {one.problem}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]  # fmt: skip
    return "\n".join(lines + notes)


def _workspace(loop: Loop) -> Workspace:
    root = Path(loop.workspace)
    return Workspace(root, root / "BLOCKED.md")  # steering needs only its .loopkit/


def steer(loop: Loop, command: Command, *, by: str, via: str, fleet: Fleet | None = None) -> str:
    """Give ``command`` to ``loop`` (recorded with who, via and when); what happened, in one
    line. A stop reaches only a running supervisor: with none, nothing is written (a
    ``dead`` loop's leftovers are ``loopkit stop``'s, on its machine). A pause of a paused
    loop and a resume of one that is not paused change nothing and say so — no second
    order, no second event. Another machine's loop is steered through ``fleet`` (its
    machine lands the order)."""
    if command == "stop" and loop.pid is None:
        if loop.state == "dead":
            return (f"{loop.where} is dead (its supervisor is gone): `loopkit stop "
                    f"{loop.repo}` on {loop.machine or 'this machine'} ends what its agent "
                    "left running")  # fmt: skip
        return f"{loop.where} is not running ({loop.state}): nothing to stop"
    unchanged = _unchanged(loop, command)
    if unchanged is not None:
        return unchanged
    if loop.machine is not None:
        _remote(fleet, loop).steer_remote(loop.machine, loop.workspace, command, None, by=by,
                                          via=via)  # fmt: skip
        sent = f"{loop.where}: {command} sent (by {by} via {via})"
        if command == "pause":
            then = ("after its running iteration" if loop.pid is not None
                    else "from its next `loopkit run` there")  # fmt: skip
            return f"{sent}; it waits {then} until resumed"
        return f"{sent}; its machine lands it as soon as loopkit runs there"
    order = Steering(_workspace(loop)).give(command, by=by, via=via)
    running = loop.pid is not None
    if command == "pause":
        then = "after its running iteration" if running else "at its next `loopkit run`"
        return f"{loop.repo}: paused ({order.line()}); it waits {then} until resumed"
    if command == "resume":
        return f"{loop.repo}: resumed ({order.line()})"
    return f"{loop.repo}: stopping ({order.line()})"


def _unchanged(loop: Loop, command: Command) -> str | None:
    """What is said when ``command`` would change nothing: a pause in force already, or a
    resume of a loop no pause holds. None when it changes something."""
    if command == "pause":
        held = Steering(_workspace(loop)).paused() if loop.machine is None else None
        by = held.line() if held is not None else loop.paused_by
        if by:
            return f"{loop.where} is paused already ({by}): nothing changed"
    elif command == "resume":
        if loop.machine is None:  # the order in force is what counts, whatever ps read
            pausing = Steering(_workspace(loop)).paused() is not None
        else:
            pausing = bool(loop.paused_by) or loop.state == "paused"
        if not pausing:
            return f"{loop.where} is not paused ({loop.state}): nothing to resume"
    return None


def note(loop: Loop, text: str, *, by: str, via: str, fleet: Fleet | None = None) -> str:
    """Guidance for ``loop``'s next agent run (``LOOPKIT_GUIDANCE``), once; another
    machine's loop gets it through ``fleet``."""
    if loop.machine is None:
        Notes(_workspace(loop)).add(text, by=by, via=via)
        return f"{loop.repo}: noted for its next agent run"
    if not text.strip():
        Notes.refuse_empty()
    _remote(fleet, loop).steer_remote(loop.machine, loop.workspace, "note", text.strip(),
                                      by=by, via=via)  # fmt: skip
    return f"{loop.where}: note sent for its next agent run"


SAY_WAIT = 5.0  # seconds a running supervisor has to say where a message went


def said_to(words: tuple[str, ...], found: list[Loop]) -> tuple[str | None, str]:
    """``loopkit say [REPO] TEXT``'s words: the loop they name first — only when more words
    follow and the first names a loop exactly as :func:`find` does — and the message (None:
    this workspace's loop; every word is the message)."""
    if len(words) > 1 and find(words[0], found):
        return words[0], " ".join(words[1:])
    return None, " ".join(words)


def say(
    loop: Loop, text: str, *, by: str, via: str, fleet: Fleet | None = None,
    wait: float = SAY_WAIT,
) -> str:  # fmt: skip
    """A message for ``loop``'s running turn (SPEC §24): delivered into it where the agent
    takes input mid-turn, else a note for its next agent run (``LOOPKIT_GUIDANCE``); what
    happened, in one line — the human is told which. Another machine's loop gets it as a
    note through ``fleet``."""
    if not text.strip():
        Notes.refuse_empty()
    if loop.machine is not None:
        note(loop, text, by=by, via=via, fleet=fleet)
        return (f"{loop.where}: noted for its next agent run (a message reaches a running "
                "turn only from its own machine)")  # fmt: skip
    workspace = _workspace(loop)
    if loop.pid is None:
        Notes(workspace).add(text, by=by, via=via)
        return f"{loop.repo}: noted for its next agent run (no loopkit runs there now)"
    says = Says(workspace)
    name = says.give(text, by=by, via=via)
    said = _answer(says, name, wait)
    if said is None and says.withdraw(name):  # the supervisor never took it: a note
        Notes(workspace).add(text, by=by, via=via)
        return (f"{loop.repo}: noted for its next agent run (its supervisor did not take the "
                f"message within {wait:g} s)")  # fmt: skip
    said = said or _answer(says, name, wait)
    if said is None:
        return f"{loop.repo}: taken by its supervisor, which has not said where it went yet"
    return said.line(loop.repo)


def _answer(says: Says, name: str, wait: float) -> Said | None:
    """Where message ``name`` went, once the supervisor says (polled: a short wait, once
    per message; None after ``wait`` s)."""
    end = time.monotonic() + wait
    pause = 0.005
    while (said := says.outcome(name)) is None and time.monotonic() < end:
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return said


def _remote(fleet: Fleet | None, loop: Loop) -> Fleet:
    if fleet is None:
        raise UsageError(f"{loop.where} is on another machine and no fleet is configured "
                         "here: steer it there, or set LOOPKIT_FLEET_DSN")  # fmt: skip
    return fleet
