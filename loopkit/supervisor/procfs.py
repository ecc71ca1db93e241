"""Processes as Linux's ``/proc`` shows them: who they are, whose children, what they carry.

A process is known by its pid *and* its start time (field 22 of ``/proc/<pid>/stat``, clock
ticks after boot): a pid is reused, the pair is not. Everything here only reads ``/proc`` and
finds nothing where there is none. ``reap`` waits for specific pids only — never for any
child (``waitpid(-1)``), which would steal the exit status of another thread's subprocess.
"""

from __future__ import annotations

import contextlib
import os

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Iterable

PROC = "/proc"


def read(path: str) -> bytes:
    """A small /proc file (os calls, not pathlib: these run for every process, often)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 1 << 16)]
        while chunks[-1]:
            chunks.append(os.read(fd, 1 << 16))
        return b"".join(chunks)
    finally:
        os.close(fd)


@record(frozen=True, slots=True)
class Proc:
    pid: int
    state: str  # R, S, D, Z (zombie), X (dead), …
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks after boot

    @property
    def gone(self) -> bool:
        """Exited: a zombie (or dead) waits only to be reaped."""
        return self.state in ("Z", "X")


def stat(pid: int) -> Proc | None:
    """``/proc/<pid>/stat``, or None when there is no such process."""
    try:
        data = read(f"{PROC}/{pid}/stat")
        fields = data[data.rindex(b")") + 2 :].split()
        return Proc(pid, fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]),
                    int(fields[19]))  # fmt: skip
    except (OSError, ValueError, IndexError):
        return None


def running(pid: int, start: int | None = None) -> bool:
    """``pid`` runs (not a zombie) and, when ``start`` is given, is the process started then."""
    proc = stat(pid)
    return proc is not None and not proc.gone and (start is None or proc.start == start)


def all_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(PROC) if name.isdigit()]
    except OSError:
        return []


def children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (zombies included)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            text = read(f"{PROC}/{pid}/task/{task}/children")
        except FileNotFoundError:  # no CONFIG_PROC_CHILDREN (or the thread ended)
            if os.path.exists(f"{PROC}/{pid}/task/{task}"):
                return [p for p in all_pids() if (s := stat(p)) is not None and s.ppid == pid]
            continue
        except OSError:
            continue
        found.extend(int(word) for word in text.split())
    return found


def descendants(pid: int) -> list[int]:
    """Everything below ``pid`` in the process tree, parents before their children."""
    found: list[int] = []
    queue = [pid]
    while queue:
        below = children(queue.pop())
        found.extend(below)
        queue.extend(below)
    return found


def carrying(variable: str, value: str, pids: Iterable[int]) -> list[int]:
    """Those of ``pids`` whose environment (as they were started) has ``variable=value``.

    Another user's processes cannot be read unless we are root: they are skipped.
    """
    needle = f"\0{variable}={value}\0".encode()
    found = []
    for pid in pids:
        try:
            environ = read(f"{PROC}/{pid}/environ")
        except OSError:
            continue
        if needle in b"\0" + environ:
            found.append(pid)
    return found


def cgroup_of(pid: int) -> str | None:
    """The process's cgroup v2 path (the ``0::`` line of ``/proc/<pid>/cgroup``)."""
    try:
        text = read(f"{PROC}/{pid}/cgroup").decode(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def ancestors(pid: int) -> set[int]:
    """``pid`` and its parents up to init."""
    found: set[int] = set()
    while pid > 0 and pid not in found:
        found.add(pid)
        proc = stat(pid)
        pid = proc.ppid if proc is not None else 0
    return found


def send(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def reap(pids: Iterable[int]) -> None:
    """Collect the exit status of those of ``pids`` that are our exited children."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
