"""The next command's process, made ahead of time (SPEC section 20).

Joining a cgroup is a migration, and the kernel makes the first one after an idle spell wait
out an RCU grace period (8–18 ms measured) — on the path a human waits on: unblock → agent
restarted. So the :class:`~loopkit.supervisor.runner.Runner` keeps the process of its next
command ready: one is made while the loop is blocked, and while each command runs, the one
for the command after it. A :class:`Prepared` is a ``/bin/sh`` started in a new session, in
the supervisor's folder, stdin from /dev/null and its output to a pipe of its own, which

1. joins its own cgroup — the slow part, paid now and by it (the supervisor does not wait);
2. reads, on fd 3, from a pipe whose write end only the supervisor holds, what only the
   release knows — the changes to its environment (``LOOPKIT_DECISION``,
   ``LOOPKIT_GUIDANCE``, ``LOOPKIT_ITERATION``, … only ``LOOPKIT_*`` names may differ from
   the environment it was started with) and the command — as one brace group, parsed whole
   before any of it runs: a script cut short (its writer killed) runs nothing;
3. runs the command as the one shell a fresh command runs in does: ``exec`` for an argv,
   ``eval`` for a shell string. The variables the command and everything it starts see are
   a fresh command's, ``$0``, ``$$`` and ``$#`` too.

Never left behind: when the supervisor dies (``kill -9`` included) the kernel closes its end
of the pipe; the shell reads end-of-file — or a release cut short, a syntax error — and on
its way out (its EXIT trap) moves back to the supervisor's cgroup and removes its own. One
that is not used (a stop, the loop's end, an environment it cannot be given) is killed,
reaped and its cgroup removed (:meth:`Prepared.discard`). Until then ``running.json`` lists
it (``also``), so a next supervisor finds it as well.

Only with a writable cgroup v2 — without one nothing is slow to prepare, and nothing is.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal

from loopkit.supervisor.containment import Job

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from loopkit.supervisor.cgroup import Cgroup
    from loopkit.supervisor.containment import Containment

PREFIX = "LOOPKIT_"  # the only variables a release may set or unset
_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


def helper(group: Cgroup) -> str:
    """The prepared shell's script: join, wait for the release, or clean up on the way out.

    It sets no variable and no option, so the command it ``eval``s finds the shell a fresh
    command would. The clean-up (back to the parent cgroup, ours removed) is its EXIT trap:
    it runs on every way out before a release is read whole — an end-of-file (the
    supervisor is gone, or dropped it), a release cut short (a syntax error: the shell exits
    2) — and the release's first command, run only once all of it has been parsed, removes
    it: the command finds no trap, as in a fresh shell. After the release the ``exit``
    ends the shell with the status the script left — a ``return`` in a shell command leaves
    the ``.`` script with its status, as it leaves ``sh -c`` with it.
    """
    folder = shlex.quote(str(group.path))
    procs = shlex.quote(str(group.path / "cgroup.procs"))
    parent = shlex.quote(str(group.path.parent / "cgroup.procs"))
    leave = f"{{ echo $$ >{parent}; }} 2>/dev/null && rmdir {folder} 2>/dev/null"
    return (
        f"{{ echo $$ >{procs}; }} 2>/dev/null || rmdir {folder} 2>/dev/null\n"
        f"trap {shlex.quote(leave)} EXIT\n"
        ". /proc/self/fd/3\n"
        "exit\n"
    )


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str] | None:
    """The shell lines that turn environment ``before`` into ``after``; None when a name
    that is not ``LOOPKIT_*`` (or not a shell name) would change."""
    lines: list[str] = []
    gone = [k for k in before if k not in after]
    changed = [k for k, v in after.items() if before.get(k) != v]
    for name in (*gone, *changed):
        if not name.startswith(PREFIX) or not _NAME.match(name):
            return None
    if gone:
        lines.append("unset -v " + " ".join(gone))
    lines += [f"export {name}={shlex.quote(after[name])}" for name in changed]
    return lines


def script(argv: list[str], lines: list[str]) -> bytes:
    """What the release writes: one brace group, ending in the command. Encoded as a fresh
    process's environment is (``os.fsencode``): a value holding bytes that are not UTF-8
    reaches the command as those bytes."""
    if len(argv) == 3 and argv[:2] == ["/bin/sh", "-c"]:
        # A shell command: in this shell, as a fresh one runs in its own; its status is the
        # shell's (without the exit, the helper's script would go on after it).
        run = f"eval {shlex.quote(argv[2])}\nexit"
    else:
        run = f"exec {shlex.join(argv)}"
    return os.fsencode(
        "{ trap - EXIT; exec 3<&-\n" + "".join(f"{line}\n" for line in lines) + f"{run}\n}}\n"
    )


class Prepared:
    """One shell in its cgroup, waiting on a pipe for its command."""

    def __init__(self, job: Job, output: int, release: int, cwd: str):
        self.job = job  # its env: what the shell was started with
        self.output = output  # the read end of its stdout and stderr
        self._release = release  # the write end of its fd 3
        self.cwd = cwd
        self.returncode: int | None = None

    @classmethod
    def start(cls, owner: Containment, cwd: str, env: Mapping[str, str]) -> Prepared | None:
        """Start one in a new cgroup, or None (no cgroup can be made; it cannot start)."""
        if owner.parent is None or cwd != os.getcwd():
            return None  # posix_spawn starts in our folder: the supervisor runs in its own
        group = owner.new_cgroup()
        if group is None:
            return None
        full = owner.environment(env)
        made: list[int] = []
        try:
            out_read, out_write = os.pipe()
            made += (out_read, out_write)
            rel_read, rel_write = os.pipe()
        except OSError as exc:  # out of descriptors (EMFILE): the command runs fresh
            for fd in made:
                os.close(fd)
            group.remove()
            owner.debug_once("prepare_failed", f"cannot prepare a command: {exc.strerror}")
            return None
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_write, 1),
            (os.POSIX_SPAWN_DUP2, out_write, 2),
            (os.POSIX_SPAWN_DUP2, rel_read, 3),
        ]
        try:
            pid = os.posix_spawn("/bin/sh", ["/bin/sh", "-c", helper(group)], full,
                                 file_actions=actions, setsid=True)  # fmt: skip
        except OSError as exc:
            for fd in (out_read, rel_write):
                os.close(fd)
            group.remove()
            owner.debug_once("prepare_failed", f"cannot prepare a command: {exc.strerror}")
            return None
        finally:
            os.close(out_write)
            os.close(rel_read)
        job = Job(owner, [], full, group)
        job.started_ahead(pid)
        return cls(job, out_read, rel_write, cwd)

    @property
    def pid(self) -> int:
        assert self.job.pid is not None
        return self.job.pid

    def alive(self) -> bool:
        """It still waits (it is reaped if it has exited)."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode is None

    def release(self, argv: list[str], cwd: str, env: Mapping[str, str]) -> bool:
        """Hand it ``argv`` in ``env``; False (nothing sent) when it cannot run it as a fresh
        process would — another folder, a change outside ``LOOPKIT_*`` — or has exited."""
        if cwd != self.cwd or not self.alive():
            return False
        lines = changes(self.job.env, self.job.owner.environment(env))
        if lines is None:
            return False
        data = script(argv, lines)
        try:
            while data:
                data = data[os.write(self._release, data) :]
        except OSError:  # it died meanwhile (EPIPE); what it read was never whole
            return False
        finally:
            if not data:
                self._close_release()
        self.job.argv = argv  # (Job.started, next, makes it the command)
        return True

    def _close_release(self) -> None:
        if self._release >= 0:
            with contextlib.suppress(OSError):
                os.close(self._release)
            self._release = -1

    def discard(self) -> None:
        """Kill it (before its pipe closes: it never acts on an EOF), reap it, remove its
        cgroup."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        self._close_release()
        with contextlib.suppress(OSError):
            os.close(self.output)
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.returncode = -signal.SIGKILL
        elif self.returncode >= 0 and self.job.cgroup and not self.job.cgroup.exists():
            self.job.cgroup = None  # it left by itself and removed it: not a failure to join
        self.job.finish()
