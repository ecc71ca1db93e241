"""Nothing a command starts outlives it (SPEC section 14).

Every command the :class:`~loopkit.supervisor.runner.Runner` starts — agent, verify, done,
preflight — runs in a new session, and besides:

- carries ``LOOPKIT_AGENT_SESSION``, a random token made once per supervisor run, in its
  environment, which its descendants inherit;
- runs in a cgroup v2 of its own where a writable one exists
  (:mod:`~loopkit.supervisor.cgroup`), which no descendant leaves by ``setsid`` or a double
  fork; anything in the way of that falls back quietly (one debug event) to the token;
- is recorded in ``.loopkit/running.json`` (pid = pgid, start time, cgroup, token, command)
  from right after its start until its end, so that the next ``loopkit run`` can stop what
  a supervisor killed with ``kill -9`` left behind (:mod:`~loopkit.supervisor.leftovers`).

A command's processes (:meth:`Job.members`) are those in its cgroup; without one, those
running in its process group or session or carrying the token, found among our descendants
when we are a child subreaper (:func:`subreaper`; orphans are re-parented to us), else
among all processes. When the command ends, all of them are killed and those that became
our children are reaped — by pid, never ``waitpid(-1)``: other threads run subprocesses.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import time

from loopkit import atomicfile, clock, prctl
from loopkit.agentsession import SESSION_ENV, SUPERVISOR_NAME
from loopkit.log import get_logger
from loopkit.supervisor import cgroup
from loopkit.supervisor import procfs as procs
from loopkit.supervisor.cgroup import Cgroup

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path
    from typing import Any

log = get_logger("loopkit.supervisor")

RECORD_VERSION = 1
_ENTRY = ("pid", "pgid", "start_time", "cgroup")  # of a process in running.json
KILL_WAIT = 5.0  # seconds to wait for SIGKILLed processes to be gone


def label(root: Path) -> str:
    """A workspace's part of its cgroups' names: readable, and unique per folder."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', root.resolve().name)[:24]}-{digest}"


@contextlib.contextmanager
def subreaper() -> Iterator[None]:
    """Be a child subreaper while the block runs, named ``loopkit-run`` (Linux; nothing
    happens elsewhere): every process the agent starts stays a descendant, and knows it is
    one (:func:`loopkit.agentsession.under_supervisor`), however it detaches."""
    before = prctl.child_subreaper()
    name = prctl.thread_name()
    prctl.set_child_subreaper(True)
    prctl.set_thread_name(SUPERVISOR_NAME)
    try:
        yield
    finally:
        prctl.set_child_subreaper(before)
        if name is not None:
            prctl.set_thread_name(name)


def _findable(program: str, env: Mapping[str, str]) -> bool:
    if "/" in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program, path=env.get("PATH", os.defpath)) is not None


class Containment:
    """What holds the commands of one supervisor run: its token, cgroups and record."""

    def __init__(
        self,
        *,
        record: Path | None = None,
        name: str = "loopkit",
        cgroups: bool = True,
        session: str | None = None,
    ) -> None:
        self.session = session or secrets.token_hex(16)
        self.record = record
        self.name = name
        self.prefix = f"loopkit-{name}-"  # of this workspace's cgroups' names
        self.parent = cgroup.parent() if cgroups else None
        self.own_cgroup = procs.cgroup_of(os.getpid()) or "/"  # as /proc/<pid>/cgroup says
        self._quiet: set[str] = set()
        self._serial = 0  # of this run's cgroups: a command's and a prepared one's coexist
        self.running: Job | None = None  # the command started last, until it ends
        self.waiting: Job | None = None  # the process prepared for the next command
        self._recorded: set[int] = set()  # the pids running.json names now

    def debug_once(self, what: str, message: str) -> None:
        if what not in self._quiet:
            self._quiet.add(what)
            log.debug(what, msg=message)

    def no_cgroups(self, why: str) -> None:
        self.parent = None
        self.debug_once("cgroup_unused", f"commands run without a cgroup of their own: {why}")

    def environment(self, env: Mapping[str, str]) -> dict[str, str]:
        """A command's environment: ``env`` and the run's token."""
        return {**env, SESSION_ENV: self.session}

    def new_cgroup(self) -> Cgroup | None:
        """A new cgroup for one command, ``loopkit-<workspace>-<our pid>.<n>``, or None."""
        if self.parent is None:
            return None
        self._serial += 1
        try:
            return Cgroup.create(self.parent / f"{self.prefix}{os.getpid()}.{self._serial}")
        except OSError as exc:
            self.no_cgroups(f"cannot make one in {self.parent} ({exc.strerror})")
            return None

    def prepare(self, argv: list[str], env: Mapping[str, str]) -> Job:
        """The command as it is to be started: in its cgroup, with the token."""
        env = self.environment(env)
        group = self.new_cgroup() if _findable(argv[0], env) else None  # else: not-started
        return Job(self, group.wrap(argv) if group else argv, env, group)

    def findable(self, argv: list[str], env: Mapping[str, str]) -> bool:
        return _findable(argv[0], env)

    def write_record(self) -> None:
        """``running.json`` as things stand: the command started last and, under ``also``,
        the process prepared for the next one; removed when there is neither."""
        if self.record is None:
            return
        running, waiting = self.running, self.waiting
        if running is None and waiting is None:
            self.remove_record()
            return
        data: dict[str, Any] = {"version": RECORD_VERSION, "supervisor": os.getpid()}
        data.update(running.entry() if running else dict.fromkeys(_ENTRY))
        data["session"] = self.session
        data["command"] = running.command if running else None
        data["started_at"] = running.started_at if running else None
        if waiting is not None:
            data["also"] = [waiting.entry()]
        try:  # durable=False: it is for a supervisor's crash, not the machine's
            atomicfile.write_json(self.record, data, durable=False, compact=True)
        except OSError as exc:
            self.debug_once("record_unwritable", f"cannot write {self.record}: {exc.strerror}")
            return
        self._recorded = {job.pid for job in (running, waiting) if job and job.pid is not None}

    def recorded(self, job: Job) -> bool:
        """Whether ``running.json`` names ``job``'s process already."""
        return job.pid is not None and job.pid in self._recorded

    def ended(self, job: Job) -> None:
        """``job`` has ended: the record no longer names it as running — left as it is while
        a prepared process waits (the next command's start rewrites it; a dead leader in it
        is passed over: its start time no longer matches), removed when nothing is left."""
        if self.waiting is job:
            self.waiting = None
            self.write_record()
        elif self.running is job:
            self.running = None
            if self.waiting is None:
                self.remove_record()

    def remove_record(self) -> None:
        self._recorded = set()
        if self.record is not None:
            with contextlib.suppress(OSError):
                self.record.unlink()  # (a folder in its place stays: not ours to remove)


class Job:
    """One command, from its start to the end of everything it started."""

    def __init__(
        self, owner: Containment, argv: list[str], env: dict[str, str], group: Cgroup | None
    ) -> None:
        self.owner = owner
        self.argv = argv
        self.env = env
        self.cgroup = group
        self.pid: int | None = None
        self.start: int | None = None  # its leader's start time
        self.command = ""
        self.started_at = ""
        self._seen: dict[int, int] = {}  # pid → start time of every member seen running
        self._finished = False

    def entry(self) -> dict[str, Any]:
        """What ``running.json`` says of it."""
        cgroup = str(self.cgroup.path) if self.cgroup else None
        return {"pid": self.pid, "pgid": self.pid, "start_time": self.start, "cgroup": cgroup}

    def _leader(self, pid: int) -> None:
        self.pid = pid
        proc = procs.stat(pid)
        self.start = proc.start if proc else None
        if self.start is not None:
            self._seen[pid] = self.start

    def started_ahead(self, pid: int) -> None:
        """Its process is started, prepared for a command not yet known."""
        self._leader(pid)
        self.owner.waiting = self

    def started(self, pid: int, command: str) -> None:
        """Its command runs (a prepared process released, or a fresh one): recorded, unless
        the record names its process already (prepared, under ``also``). So with a process
        made ahead for every command, ``running.json`` is written every other command: each
        running command is in it; the one prepared meanwhile may wait for the next write —
        it leaves by itself when we die (its pipe's end-of-file), and lives in a cgroup of
        this workspace, with the token, where the next supervisor looks anyway."""
        if self.owner.waiting is self:
            self.owner.waiting = None
        if self.pid != pid:
            self._leader(pid)
        self.command = command
        self.started_at = clock.iso_millis()
        self.owner.running = self
        if not self.owner.recorded(self):
            self.owner.write_record()

    def members(self) -> list[int]:
        """The command's processes still running (the leader among them while it runs)."""
        if self.cgroup is not None and self.cgroup.exists():
            found = self.cgroup.pids()
        else:
            found = self._strays()
        for pid in found:
            proc = procs.stat(pid)
            if proc is not None:
                self._seen[pid] = proc.start
        return found

    def _strays(self) -> list[int]:
        """Without a cgroup: the processes of its group or session, or carrying the token."""
        if self.pid is None:
            return []
        mine = os.getpid()
        below = procs.descendants(mine) if prctl.child_subreaper() else procs.all_pids()
        found: list[int] = []
        others: list[int] = []
        for pid in below:
            proc = procs.stat(pid)
            if proc is None or proc.gone or pid == mine:
                continue
            (found if self.pid in (proc.pgid, proc.sid) else others).append(pid)
        return found + procs.carrying(SESSION_ENV, self.owner.session, others)

    def signal(self, sig: signal.Signals) -> None:
        """``sig`` to the command's process group and to all its other processes."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
        procs.send(self.members(), sig)

    def finish(self) -> None:
        """Kill whatever of the command still runs, reap it, remove its cgroup and record."""
        if self._finished:
            return
        self._finished = True
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            deadline, pause = time.monotonic() + KILL_WAIT, 0.001
            while True:
                if left := self.members():
                    if self.cgroup is not None:
                        self.cgroup.kill()
                    procs.send(left, signal.SIGKILL)
                self._reap()
                # A cgroup stops listing a process as it starts to exit: wait until every
                # one seen is a zombie (then reaped) or gone, or its zombie comes too late.
                dying = [p for p, start in self._seen.items() if procs.running(p, start)]
                if not left and not dying:
                    break
                if time.monotonic() > deadline:
                    log.warning(
                        "strays_left", pids=left or dying, msg=f"could not stop {left or dying}"
                    )
                    break
                time.sleep(pause)  # SIGKILL is not instant; a D-state process takes longer
                pause = min(pause * 2, 0.05)
            self._reap()
        if self.cgroup is not None:
            if not self.cgroup.exists():  # its shell could not join it and removed it
                self.owner.no_cgroups(f"a command could not join {self.cgroup.path}")
            elif not self.cgroup.remove():
                self.owner.debug_once("cgroup_busy", f"cannot remove {self.cgroup.path}")
        self.owner.ended(self)

    def _reap(self) -> None:
        """Reap the command's processes that were re-parented to us and have exited."""
        try:  # a look that reaps nothing: is any child of ours a zombie at all?
            if os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                return  # none: no /proc scan
        except ChildProcessError:
            return  # no child at all
        ours = None
        if self.cgroup is not None:
            ours = f"{self.owner.own_cgroup.rstrip('/')}/{self.cgroup.path.name}"
        mine = []
        for pid in procs.children(os.getpid()):
            proc = procs.stat(pid)
            if pid == self.pid or proc is None or not proc.gone:
                continue  # the leader is the Runner's to reap
            if (
                self.pid in (proc.pgid, proc.sid)
                or self._seen.get(pid) == proc.start
                or (ours is not None and procs.cgroup_of(pid) == ours)
            ):
                mine.append(pid)
        procs.reap(mine)
