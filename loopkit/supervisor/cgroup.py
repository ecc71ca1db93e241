"""A cgroup v2 of a command's own, where a writable one exists (SPEC section 14).

Where: under our own cgroup (the ``0::`` line of ``/proc/self/cgroup``) in the cgroup2 mount
that ``/proc/self/mountinfo`` names — ``/sys/fs/cgroup`` on a unified host,
``/sys/fs/cgroup/unified`` on a hybrid one.

Born inside: the command is started through its shell, which writes its own pid into the
cgroup's ``cgroup.procs`` before it runs anything of the command (:meth:`Cgroup.wrap`), so
nothing the command starts can fork outside first. The supervisor itself never enters the
cgroup, so a ``cgroup.kill`` can never hit it, nor a subprocess another thread starts
meanwhile. When that write fails the shell removes the cgroup again: the supervisor sees it
is gone (:meth:`Cgroup.exists`) and looks for the command's strays by other means.

Every such cgroup is named ``loopkit-…``: :mod:`loopkit.agentsession` tells a supervised
agent's processes by that, and the next supervisor stops only cgroups named so.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
from pathlib import Path

from loopkit.supervisor import procfs as procs

MOUNTINFO = Path("/proc/self/mountinfo")
OWN = Path("/proc/self/cgroup")


def _unescape(field: str) -> str:
    """mountinfo writes a space as ``\\040`` (and so on)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def mount_point(mountinfo: str) -> tuple[Path, str] | None:
    """The first cgroup2 mount: its mount point and the cgroup path it shows at its root."""
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, kind = left.split(), right.split()
        if len(fields) >= 5 and kind and kind[0] == "cgroup2":
            return Path(_unescape(fields[4])), _unescape(fields[3])
    return None


def own_folder(mountinfo: str, own: str) -> Path | None:
    """The folder of our own cgroup (``own``: the text of ``/proc/self/cgroup``), or None."""
    found = mount_point(mountinfo)
    path = next((line[3:] for line in own.splitlines() if line.startswith("0::")), None)
    if found is None or path is None:
        return None
    mount, root = found
    if root != "/" and path != root and not path.startswith(root.rstrip("/") + "/"):
        return None  # our cgroup is not below what this mount shows
    relative = path[len(root) :] if root != "/" else path
    return mount / relative.strip("/")


def mount() -> Path | None:
    """Where the cgroup2 file system is mounted, if it is."""
    try:
        found = mount_point(MOUNTINFO.read_text())
    except OSError:
        return None
    return found[0] if found else None


def parent() -> Path | None:
    """Where commands' cgroups go: our own cgroup's folder, when there is one."""
    try:
        folder = own_folder(MOUNTINFO.read_text(), OWN.read_text())
    except OSError:
        return None
    return folder if folder is not None and (folder / "cgroup.procs").exists() else None


class Cgroup:
    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, path: Path) -> Cgroup:
        """Make the cgroup; one left at this path from before is emptied and reused.

        Raises OSError when it cannot be made.
        """
        cgroup = cls(path)
        try:
            path.mkdir()
        except FileExistsError:
            cgroup.kill()
        return cgroup

    def exists(self) -> bool:
        return (self.path / "cgroup.procs").exists()

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started so that its process joins the cgroup before running anything."""
        folder = shlex.quote(str(self.path))
        join = f"{{ echo $$ >{folder}/cgroup.procs; }} 2>/dev/null || rmdir {folder} 2>/dev/null"
        if len(argv) == 3 and argv[:2] == ["/bin/sh", "-c"]:  # a shell command: one shell
            return ["/bin/sh", "-c", f"{join}; {argv[2]}"]
        return ["/bin/sh", "-c", f'{join}; exec "$@"', "sh", *argv]

    def _folders(self) -> list[str]:
        """This cgroup and every cgroup below it (a command may make some), the deepest first."""
        found: list[str] = []
        pending = [str(self.path)]
        while pending:
            folder = pending.pop()
            found.append(folder)
            with contextlib.suppress(OSError):
                pending.extend(
                    e.path for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)
                )
        return found[::-1]

    def pids(self) -> list[int]:
        """Every process in the cgroup or below it (exited ones are not listed)."""
        with contextlib.suppress(OSError):  # one read says "none, below either" most often
            if b"populated 0" in procs.read(f"{self.path}/cgroup.events"):
                return []
        found: list[int] = []
        for folder in self._folders():
            with contextlib.suppress(OSError, ValueError):
                found.extend(int(w) for w in procs.read(f"{folder}/cgroup.procs").split())
        return found

    def signal(self, sig: signal.Signals) -> list[int]:
        pids = self.pids()
        procs.send(pids, sig)
        return pids

    def kill(self) -> None:
        """SIGKILL to everything in it: ``cgroup.kill`` (Linux ≥ 5.14), else one by one."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            self.signal(signal.SIGKILL)

    def remove(self) -> bool:
        """Remove it (and any cgroup the command made below it); False while any is busy."""
        try:  # most commands make none below theirs: one rmdir, no scan
            os.rmdir(self.path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            pass
        for folder in self._folders():
            try:
                os.rmdir(folder)
            except FileNotFoundError:
                continue
            except OSError:
                return False
        return True
