"""What a supervisor killed with ``kill -9`` left running, stopped when the next one starts.

``.loopkit/running.json`` names the command that was running when its supervisor died and,
under ``also``, the process it had prepared for the next one
(:mod:`~loopkit.supervisor.containment` writes it). Before iteration 1 the next supervisor —
which holds the workspace's lock, so the one before is gone — stops, with SIGTERM and then
SIGKILL after ``kill_grace``:

- everything in the recorded cgroup, and in any other cgroup of this workspace left in our
  own (a supervisor killed between making one and recording it);
- each recorded process group, only while its leader is still the process the record names
  (same start time): a pid since reused by an unrelated process is left alone;
- every process that carries the recorded ``LOOPKIT_AGENT_SESSION`` token.

Then it removes those cgroups and the record. Never itself nor one of its ancestors, and
only cgroups named ``loopkit-…``: the record is a file in the workspace, not an order.
``loopkit stop`` of a ``dead`` loop does the same at once (:func:`end_dead_loop`): its
agent's processes need not wait for a next run that may never come.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from loopkit import readfile
from loopkit.agentsession import SESSION_ENV
from loopkit.datarecord import record
from loopkit.errors import AlreadyRunning
from loopkit.supervisor import cgroup
from loopkit.supervisor import procfs as procs
from loopkit.supervisor.cgroup import Cgroup
from loopkit.supervisor.containment import KILL_WAIT, Containment, label
from loopkit.workspace import Workspace
from loopkit.workspace.state import LoopStatus, StateFile, SupervisorLock
from loopkit.workspace.steer import record_event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True, slots=True)
class Stopped:
    count: int  # processes stopped
    supervisor: int | None  # the pid of the supervisor that left them, when recorded

    def message(self) -> str:
        by = f" (pid {self.supervisor})" if self.supervisor else ""
        return (
            f"stopped {self.count} process(es) left by a supervisor that did not exit cleanly{by}"
        )


def _read(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:  # a FIFO or a folder in its place must not hang nor stop the start
        data = readfile.json_document(readfile.read_text(path))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _group(entry: dict[str, Any]) -> int | None:
    """The recorded process group, while its leader is still the recorded process."""
    group = _int(entry.get("pgid"))
    leader = procs.stat(_int(entry.get("pid")) or 0)
    if leader is None or leader.pgid != group or leader.start != entry.get("start_time"):
        return None  # gone, or its pid now names another process
    return group


class _Left:
    """The processes a dead supervisor's record (and its workspace's cgroups) point at."""

    def __init__(self, containment: Containment, data: dict[str, Any]) -> None:
        own, mount = cgroup.parent(), cgroup.mount()
        also = data.get("also")
        # The command, and the process prepared for the next one (``also``).
        entries = [
            data,
            *(e for e in (also if isinstance(also, list) else []) if isinstance(e, dict)),
        ]
        folders = []
        for entry in entries:
            recorded = entry.get("cgroup")
            if isinstance(recorded, str) and mount is not None:
                path = Path(recorded)
                if path.name.startswith("loopkit-") and path.is_relative_to(mount):
                    folders.append(path)
        if own is not None:
            folders.extend(sorted(own.glob(f"{containment.prefix}*")))
        self.cgroups = [
            Cgroup(folder)
            for folder in dict.fromkeys(folders)  # not one we run in ourselves
            if folder.is_dir() and not (own is not None and own.is_relative_to(folder))
        ]
        self.groups = {g for g in map(_group, entries) if g is not None}
        token = data.get("session")
        self.token = token if isinstance(token, str) and token else None
        self.spared = procs.ancestors(os.getpid())

    def running(self) -> set[int]:
        found: set[int] = set()
        for group in self.cgroups:
            found.update(group.pids())
        if self.groups or self.token is not None:
            others = []
            for pid in procs.all_pids():
                proc = procs.stat(pid)
                if proc is None or proc.gone:
                    continue
                if proc.pgid in self.groups:
                    found.add(pid)
                else:
                    others.append(pid)
            if self.token is not None:
                found.update(procs.carrying(SESSION_ENV, self.token, others))
        return found - self.spared

    def signal(self, sig: signal.Signals) -> set[int]:
        found = self.running()
        if sig == signal.SIGKILL:
            for group in self.cgroups:
                group.kill()
        procs.send(found, sig)
        return found


def stop_left_behind(
    containment: Containment, *, grace: float, stop: threading.Event | None = None
) -> Stopped:
    """Stop what the recorded supervisor left, remove its cgroups and the record."""
    data = _read(containment.record)
    left = _Left(containment, data)
    stopped = left.signal(signal.SIGTERM)
    end = time.monotonic() + grace
    waiting = stop or threading.Event()
    while stopped and left.running() and time.monotonic() < end:
        if waiting.wait(0.02):
            break  # a stop of our own: no more grace for them
    deadline = time.monotonic() + KILL_WAIT
    while (found := left.signal(signal.SIGKILL)) and time.monotonic() < deadline:
        stopped |= found
        time.sleep(0.005)
    for group in left.cgroups:
        group.remove()
    containment.remove_record()
    return Stopped(len(stopped), _int(data.get("supervisor")))


def end_dead_loop(root: Path, *, grace: float, by: str, via: str) -> Stopped | None:
    """``loopkit stop`` of a ``dead`` loop (its supervisor was killed): what its agent left
    running — the recorded process groups, the session's processes, its cgroups — stopped
    now, as the next ``loopkit run`` would before iteration 1, and the loop marked
    ``stopped``. Under the workspace's supervisor lock, so never beside a live supervisor:
    None when one holds the workspace now (the loop is not dead)."""
    workspace = Workspace(root, root / "BLOCKED.md")  # its .loopkit/ is all this needs
    lock = SupervisorLock(workspace)
    try:
        lock.acquire()
    except AlreadyRunning:
        return None
    try:
        containment = Containment(record=workspace.running_file, name=label(root))
        stopped = stop_left_behind(containment, grace=grace)
        states = StateFile(workspace)
        state = states.load()
        if state.status in (LoopStatus.RUNNING, LoopStatus.BLOCKED, LoopStatus.PAUSED):
            state.status = LoopStatus.STOPPED
            states.save(state)
        record_event(workspace, "steer_stop_given", f"stop by {by} via {via}: its supervisor was "
                     f"gone; {stopped.count} process(es) its agent left stopped",
                     by=by, via=via, stopped=stopped.count)  # fmt: skip
        return stopped
    finally:
        lock.release()
