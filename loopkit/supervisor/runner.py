"""Running one loop command: its own session and process group, output teed, bounded.

A command is a shell string (``/bin/sh -c``) or an argv tuple (no shell). It starts in a
new session, so the whole group — grandchildren included — can be signalled at once. Its
output (stdout and stderr, merged) streams to the console and to the iteration log while a
bounded tail is kept for error messages.

The main thread waits in one ``select``: on the child's output, its exit (a pidfd) and the
caller's ``wake`` (a signal handler or a folder change sets it), so a stop is acted on at
once and no helper thread runs per command. Each command is held by a
:class:`~loopkit.supervisor.containment.Job` — its cgroup, its session token, its record —
so descendants that left the group (``setsid``, double forks) are in reach too. On timeout
or stop the group and all those get SIGTERM, then SIGKILL after ``kill_grace``. Anything of
the command still running after the leader exits is killed: no orphan outlives its command —
after ``linger`` seconds when the caller gives some (an agent's last hook, which Claude Code
starts and does not wait for, finishes writing first).

An agent that speaks on its standard streams (Claude Code's stream-json) runs with a
:class:`Conversation`: the runner gives it the child's stdin (:class:`AgentInput`, written
without ever blocking the loop) and every chunk of the child's stdout, which then no longer
goes to the log; what the conversation says (:meth:`Conversation.opened`'s ``say``) goes
where output goes — the console, the log, the tail. stderr goes there as before.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from typing import Literal, Protocol

from loopkit.datarecord import record
from loopkit.supervisor.containment import Containment
from loopkit.supervisor.iterlog import MAX_LOG, Capped
from loopkit.supervisor.prepared import Prepared

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from loopkit.config import Command
    from loopkit.supervisor.containment import Job
    from loopkit.watch.wake import Wake

TAIL_BYTES = 8192
HEAD_BYTES = 2048  # of the start of the output, kept too: what an agent says it did first
Ending = Literal["exited", "timeout", "stopped", "interrupted", "not-started"]


@record(frozen=True, slots=True)
class Finished:
    ending: Ending
    exit_code: int | None  # None when it never started or was killed by a signal
    duration: float
    tail: str  # the last TAIL_BYTES of output, decoded
    error: str | None = None  # why it did not start, or how it ended when not by itself
    head: str = ""  # the first HEAD_BYTES of output, decoded (the stuck detector's)

    @property
    def ok(self) -> bool:
        return self.ending == "exited" and self.exit_code == 0

    @property
    def could_not_run(self) -> bool:
        """It never really ran: not found, not executable (the shell's 126/127 included)."""
        return self.ending == "not-started" or (
            self.ending == "exited" and self.exit_code in (126, 127)
        )


def describe(command: Command) -> str:
    return command if isinstance(command, str) else " ".join(command)


def argv_of(command: Command) -> list[str]:
    return ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)


class Conversation(Protocol):
    """An agent whose standard streams loopkit reads — and, with ``writes``, writes
    (:mod:`~loopkit.supervisor.turnwatch`, :mod:`~loopkit.supervisor.claudestream`).

    The runner calls :meth:`opened` once the child runs — with its stdin (None unless
    ``writes``: it reads /dev/null then), where to say things (the console and the log),
    and how to signal the command's process group —, :meth:`received` with each chunk of its
    stdout as it arrives, :meth:`output` when it printed on stderr, :meth:`tick` after every
    wake-up (and by :meth:`due` at the latest), and :meth:`closed` when the command has
    ended — all on the runner's thread, between two waits: each must return soon. Once
    ``ending`` is set, the runner stops the command's whole group."""

    writes: bool
    ending: bool

    def opened(
        self, stdin: AgentInput | None, say: Callable[[bytes], None],
        signal_group: Callable[[int], None] | None = None,
    ) -> None: ...  # fmt: skip

    def received(self, chunk: bytes) -> None: ...

    def output(self) -> None: ...

    def due(self) -> float | None: ...

    def tick(self) -> None: ...

    def closed(self) -> None: ...


class AgentInput:
    """The write end of a child's stdin: :meth:`write` queues, the runner's wait sends what
    the pipe takes (never blocking: an agent that stops reading stalls no supervisor), and
    :meth:`close` closes it once all queued is sent."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self.pending = bytearray()
        self.closing = False
        self.broken = False  # the child closed its end: what is queued is dropped
        os.set_blocking(fd, False)

    def write(self, data: bytes) -> None:
        if self.fd is not None and not self.closing:
            self.pending += data
            self.flush()

    def close(self) -> None:
        self.closing = True
        self.flush()

    @property
    def waiting(self) -> bool:
        """Whether queued bytes wait for room in the pipe."""
        return self.fd is not None and bool(self.pending)

    def flush(self) -> None:
        while self.fd is not None and self.pending:
            try:
                sent = os.write(self.fd, self.pending)
            except BlockingIOError:
                return
            except OSError:  # EPIPE: the child is gone or closed its stdin
                self.broken = True
                self.pending.clear()
                break
            del self.pending[:sent]
        if self.fd is not None and self.closing and not self.pending:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def discard(self) -> None:
        self.pending.clear()
        self.closing = True
        self.flush()


class _Output:
    """Copies a child's output to the sinks and keeps the first HEAD_BYTES and the last
    TAIL_BYTES."""

    def __init__(self, fd: int, sinks: list[Callable[[bytes], None]], *, tail: bool = True) -> None:
        self.fd = fd
        self.sinks = sinks
        self.keeps_tail = tail
        self.tail: deque[bytes] = deque()
        self.size = 0
        self.head = b""
        self.eof = False
        os.set_blocking(fd, False)

    def emit(self, chunk: bytes) -> None:
        """``chunk`` to the sinks and the tail, as if the child had printed it."""
        for sink in self.sinks:
            with contextlib.suppress(Exception):
                sink(chunk)
        if not self.keeps_tail:
            return
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[: HEAD_BYTES - len(self.head)]
        self.tail.append(chunk)
        self.size += len(chunk)
        while self.size - len(self.tail[0]) >= TAIL_BYTES:
            self.size -= len(self.tail.popleft())

    def pump(self) -> None:
        """Read what is there now (never blocks)."""
        while not self.eof:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                os.close(self.fd)
                return
            self.emit(chunk)

    def close(self) -> None:
        if not self.eof:
            self.eof = True
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def text(self) -> str:
        return b"".join(self.tail)[-TAIL_BYTES:].decode("utf-8", "replace")

    def head_text(self) -> str:
        return self.head.decode("utf-8", "replace")


class _Streams:
    """A child's outputs (stderr and stdout merged, or stdout apart for a conversation) and
    its stdin when it has one: what one ``select`` waits on."""

    def __init__(self, main: _Output, extra: _Output | None = None,
                 stdin: AgentInput | None = None) -> None:  # fmt: skip
        self.main = main
        self.all = [main, *([extra] if extra else [])]
        self.stdin = stdin

    @property
    def eof(self) -> bool:
        return all(o.eof for o in self.all)

    def fds(self) -> list[int]:
        return [o.fd for o in self.all if not o.eof]

    def writing(self) -> list[int]:
        stdin = self.stdin
        return [stdin.fd] if stdin is not None and stdin.waiting and stdin.fd is not None else []

    def pump(self) -> None:
        if self.stdin is not None:
            self.stdin.flush()
        for output in self.all:
            output.pump()

    def close(self) -> None:
        for output in self.all:
            output.close()
        if self.stdin is not None:
            self.stdin.discard()

    def text(self) -> str:
        return self.main.text()

    def head_text(self) -> str:
        return self.main.head_text()


class _Spawned:
    """A child started with ``posix_spawn``: the part of ``Popen`` the runner uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self.returncode = -1
                break
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


Child = subprocess.Popen[bytes] | _Spawned


class LogSink(Protocol):
    def write(self, chunk: bytes, /) -> object: ...


def spawn(
    argv: list[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    out: int,
    stdin: int | None = None,
    stdout: int | None = None,
) -> Child:
    """Start ``argv`` in a new session, stdin from ``stdin`` (default /dev/null), stdout to
    ``stdout`` (default ``out``) and stderr to ``out``.

    ``posix_spawn`` (vfork-fast) when the child's folder is ours — the supervisor runs in
    its workspace — else ``Popen``, which can change folder. Raises OSError when it cannot
    start (not found, not executable).
    """
    stdout = out if stdout is None else stdout
    if hasattr(os, "posix_spawnp") and cwd == os.getcwd():
        first = (
            (os.POSIX_SPAWN_DUP2, stdin, 0)
            if stdin is not None
            else (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
        )
        actions = [first, (os.POSIX_SPAWN_DUP2, stdout, 1), (os.POSIX_SPAWN_DUP2, out, 2)]
        return _Spawned(os.posix_spawnp(argv[0], argv, dict(env), file_actions=actions,
                                        setsid=True))  # fmt: skip
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=stdout,
        stderr=out,
        start_new_session=True,
    )


class _Exit:
    """Tells when the child has exited: a pidfd in the select set, or a reaper thread."""

    def __init__(self, proc: Child, wake: Wake) -> None:
        self.proc = proc
        self.done = threading.Event()
        self.fd: int | None = None
        try:
            self.fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):  # not Linux ≥ 5.3: a thread waits instead

            def reap() -> None:
                proc.wait()
                self.done.set()
                wake.set()

            threading.Thread(target=reap, daemon=True, name="loopkit-reap").start()

    def poll(self) -> bool:
        if not self.done.is_set() and self.fd is not None and self.proc.poll() is not None:
            self.done.set()
        return self.done.is_set()

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _group(pid: int) -> Callable[[int], None]:
    """A signal to the command's process group (``pid`` leads it: a new session), as Ctrl-C
    in a terminal sends SIGINT to its foreground group: the agent gets it whether the
    command is the agent itself or a shell that runs it."""

    def send(signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)

    return send


class CommandRunner(Protocol):
    """What the supervisor needs of a runner: :class:`Runner`, or a test's fake — which keeps
    :meth:`Runner.run`'s contract: the same :class:`Finished` for the same ending, the
    timeout, a stop and ``interrupt`` looked at as the real one does, the output to ``log``.
    ``then``, :meth:`ahead` and :meth:`close` are about speed alone: a fake may ignore them.

    ``wake`` and ``stop`` are what it waits on; the supervisor that is handed the runner
    sets them (a signal, a folder change) and waits on them itself between commands.
    """

    wake: Wake
    stop: threading.Event
    kill_grace: float
    max_output: int  # bytes of one command's output echoed; the rest counted, not shown

    def run(
        self,
        command: Command,
        *,
        cwd: str,
        env: Mapping[str, str],
        timeout: float | None,
        log: LogSink | None = None,
        interrupt: Callable[[], bool] | None = None,
        interrupt_grace: float = 0.0,
        recheck: float | None = None,
        then: Mapping[str, str] | None = None,
        conversation: Conversation | None = None,
        linger: float = 0.0,
    ) -> Finished: ...

    def ahead(self, cwd: str, env: Mapping[str, str]) -> None:
        """Have the next command's process ready (while the loop is blocked)."""

    def close(self) -> None:
        """Drop what is ready (the supervisor ends)."""


class Runner:
    """Runs commands for the supervisor. ``stop`` and ``wake`` are owned by the caller.

    One thread does it all: ``select`` on the child's output, its pidfd and ``wake``.
    """

    def __init__(
        self,
        *,
        wake: Wake,
        stop: threading.Event,
        kill_grace: float = 10.0,
        echo: Callable[[bytes], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        containment: Containment | None = None,
    ) -> None:
        self.containment = containment or Containment()
        self._ready: Prepared | None = None  # the next command's process, when made ahead
        self.wake = wake
        self.stop = stop
        self.kill_grace = kill_grace
        self.max_output = MAX_LOG
        self.echo = echo
        self.clock = clock

    def run(
        self,
        command: Command,
        *,
        cwd: str,
        env: Mapping[str, str],
        timeout: float | None,
        log: LogSink | None = None,
        interrupt: Callable[[], bool] | None = None,
        interrupt_grace: float = 0.0,
        recheck: float | None = None,
        then: Mapping[str, str] | None = None,
        conversation: Conversation | None = None,
        linger: float = 0.0,
    ) -> Finished:
        """Run ``command`` to its end, a timeout, a stop, or ``interrupt()`` + grace.

        ``interrupt`` is looked at whenever ``wake`` is set, and at least every ``recheck``
        seconds when given (a polling folder watch sets no events). The command runs in the
        process made ready for it (:mod:`~loopkit.supervisor.prepared`) when there is one it
        can run in, else in a fresh one. ``then``: the environment of a command to follow —
        its process is made ready while this one runs (its own variables, ``LOOPKIT_*``,
        may still change). ``conversation``: the command speaks on its stdin and stdout
        (a fresh process, never a prepared one: it needs its pipes). ``linger``: seconds the
        rest of the command may run on after its leader exited, before it is killed.
        """
        started = self.clock()
        argv = argv_of(command)
        ready, self._ready = self._ready, None
        if ready is not None and not self.containment.findable(argv, env):
            self._ready, ready = ready, None  # kept: the fresh path says "not started"
        if conversation is not None and ready is not None:
            self._ready, ready = ready, None  # kept for the next command: this one needs pipes
        proc: Child
        talk: tuple[int | None, int] | None = None  # our ends of the child's stdin and stdout
        if ready is not None and self._release(ready, argv, cwd, env):
            job, proc, read_fd = ready.job, _Spawned(ready.pid), ready.output
        else:
            if ready is not None:
                ready.discard()
            read_fd, write_fd = os.pipe()
            theirs: list[int] = [write_fd]
            pipes: dict[str, int] = {}
            if conversation is not None:
                stdout_read, stdout_write = os.pipe()
                theirs.append(stdout_write)
                pipes = {"stdout": stdout_write}
                talk = (None, stdout_read)
                if conversation.writes:
                    stdin_read, stdin_write = os.pipe()
                    theirs.append(stdin_read)
                    pipes["stdin"] = stdin_read
                    talk = (stdin_write, stdout_read)
            job = self.containment.prepare(argv, env)
            try:
                proc = spawn(job.argv, cwd=cwd, env=job.env, out=write_fd, **pipes)
            except OSError as exc:
                for fd in (read_fd, *theirs, *(talk or ())):
                    if fd is not None:
                        os.close(fd)
                job.finish()
                reason = f"{exc.strerror or exc}: {argv[0]!r}"
                return Finished("not-started", None, 0.0, "", reason)
            for fd in theirs:
                os.close(fd)
        if then is not None:
            self._prepare(cwd, then)
        job.started(proc.pid, describe(command))
        sinks: list[Callable[[bytes], None]] = []
        echo = Capped(self.echo, self.max_output) if self.echo else None
        if echo is not None:
            sinks.append(echo.write)
        if log is not None:
            log_file = log

            def write_log(chunk: bytes) -> None:
                log_file.write(chunk)

            sinks.append(write_log)
        if conversation is not None:
            talker = conversation

            def heard(chunk: bytes) -> None:
                talker.output()

            sinks.append(heard)
        main = _Output(read_fd, sinks)
        output = _Streams(main)
        if conversation is not None and talk is not None:
            stdin = AgentInput(talk[0]) if talk[0] is not None else None
            heard_out = _Output(talk[1], [conversation.received], tail=False)
            output = _Streams(main, heard_out, stdin)
            conversation.opened(stdin, main.emit, _group(proc.pid))
            output.pump()
        exit_ = _Exit(proc, self.wake)
        try:
            ending = self._wait(
                job,
                output,
                exit_,
                started,
                timeout,
                interrupt,
                interrupt_grace,
                recheck,
                conversation,
            )
            if ending == "exited" and linger > 0:
                self._linger(job, output, linger)
            # The leader is gone; whatever it left running goes with it.
            job.finish()
            self._drain(output)
        finally:
            job.finish()
            output.close()
            exit_.close()
            if conversation is not None:
                with contextlib.suppress(Exception):
                    conversation.closed()
        if echo is not None:
            echo.note()  # the console says what it did not show
        code = proc.returncode
        error = None
        if ending == "timeout":
            error = f"killed after {timeout:g} s (iteration_timeout)"
        elif ending in ("stopped", "interrupted"):
            error = "stopped by loopkit"
        return Finished(
            ending,
            code if code is not None and code >= 0 else None,
            self.clock() - started,
            output.text(),
            error,
            output.head_text(),
        )

    def _release(self, ready: Prepared, argv: list[str], cwd: str, env: Mapping[str, str]) -> bool:
        """``ready.release``; False when it raises too: the caller discards it (it is out of
        ``_ready`` already, nothing else would) and runs the command fresh."""
        try:
            return ready.release(argv, cwd, env)
        except Exception as exc:  # any of them: a fresh process runs the command
            why = type(exc).__name__  # not its text: it may quote a value (a secret)
            self.containment.debug_once(
                "release_failed", f"cannot release a prepared process: {why}"
            )
            return False
        except BaseException:
            ready.discard()
            raise

    def _prepare(self, cwd: str, env: Mapping[str, str]) -> bool:
        """Make the next command's process unless one is ready; True when one was made."""
        if self._ready is not None:
            if self._ready.alive():
                return False
            self._ready.discard()  # killed by someone: cleaned up, made again
            self._ready = None
        try:
            self._ready = Prepared.start(self.containment, cwd, env)
        except Exception as exc:  # never out of run: the command it follows is running
            why = type(exc).__name__
            self.containment.debug_once("prepare_failed", f"cannot prepare a command: {why}")
            self._ready = None
        return self._ready is not None

    def ahead(self, cwd: str, env: Mapping[str, str]) -> None:
        """Have the next command's process ready — in its cgroup, waiting — and recorded."""
        self._prepare(cwd, env)
        ready = self._ready
        if ready is not None and not self.containment.recorded(ready.job):
            self.containment.write_record()  # made now, or while a command ran unrecorded

    def close(self) -> None:
        """Kill and clean up the process made ready, if one is (the supervisor ends)."""
        ready, self._ready = self._ready, None
        if ready is not None:
            ready.discard()

    def _select(self, output: _Streams, exit_: _Exit, timeout: float | None) -> None:
        fds: list[int] = [self.wake.fileno(), *output.fds()]
        if exit_.fd is not None and not exit_.done.is_set():
            fds.append(exit_.fd)
        with contextlib.suppress(InterruptedError):
            select.select(fds, output.writing(), [], timeout)
        output.pump()

    def _wait(
        self,
        job: Job,
        output: _Streams,
        exit_: _Exit,
        started: float,
        timeout: float | None,
        interrupt: Callable[[], bool] | None,
        interrupt_grace: float,
        recheck: float | None,
        conversation: Conversation | None = None,
    ) -> Ending:
        deadline = started + timeout if timeout else None
        interrupt_at: float | None = None
        while True:
            self.wake.clear()
            output.pump()
            if conversation is not None:
                conversation.tick()
            if exit_.poll():
                return "exited"
            now = self.clock()
            if self.stop.is_set():
                self._terminate(job, output, exit_)
                return "stopped"
            if deadline is not None and now >= deadline:
                self._terminate(job, output, exit_)
                return "timeout"
            if conversation is not None and conversation.ending:
                self._terminate(job, output, exit_)
                return "interrupted"
            if interrupt is not None and interrupt_at is None and interrupt():
                interrupt_at = now + interrupt_grace
            if interrupt_at is not None and now >= interrupt_at:
                self._terminate(job, output, exit_)
                return "interrupted"
            waits = [d - now for d in (deadline, interrupt_at) if d is not None]
            if interrupt is not None and interrupt_at is None and recheck:
                waits.append(recheck)
            if conversation is not None and (due := conversation.due()) is not None:
                waits.append(max(0.0, due - now))
            self._select(output, exit_, min(waits) if waits else None)

    def _wait_exit(self, output: _Streams, exit_: _Exit, limit: float | None) -> bool:
        end = None if limit is None else self.clock() + limit
        while not exit_.poll():
            remaining = None if end is None else end - self.clock()
            if remaining is not None and remaining <= 0:
                return False
            fds = [exit_.fd] if exit_.fd is not None else []
            fds += output.fds()
            if not fds:
                exit_.done.wait(remaining)
                continue
            with contextlib.suppress(InterruptedError):
                select.select(fds, output.writing(), [], remaining)
            output.pump()
        return True

    def _linger(self, job: Job, output: _Streams, limit: float) -> None:
        """Up to ``limit`` s for what the leader left running to end by itself (a stop
        ends the wait at once); output is read meanwhile."""
        end = self.clock() + limit
        pause = 0.005
        while not self.stop.is_set() and (remaining := end - self.clock()) > 0 and job.members():
            with contextlib.suppress(InterruptedError):
                select.select(output.fds(), [], [], min(remaining, pause))
            output.pump()
            pause = min(pause * 2, 0.05)

    def _terminate(self, job: Job, output: _Streams, exit_: _Exit) -> None:
        """SIGTERM to the command, SIGKILL after the grace period; returns once reaped.

        The rest of the command (what left its group included) has the same grace as the
        leader; what still runs at its end is killed by :meth:`Job.finish`.
        """
        end = self.clock() + self.kill_grace
        job.signal(signal.SIGTERM)
        if not self._wait_exit(output, exit_, self.kill_grace):
            job.signal(signal.SIGKILL)
            self._wait_exit(output, exit_, None)
            return
        while (remaining := end - self.clock()) > 0 and job.members():
            with contextlib.suppress(InterruptedError):
                select.select(output.fds(), [], [], min(remaining, 0.05))
            output.pump()

    def _drain(self, output: _Streams, grace: float = 1.0) -> None:
        """Read the output to its end; a process that escaped the group gets ``grace`` s."""
        end = self.clock() + grace
        while not output.eof:
            remaining = end - self.clock()
            if remaining <= 0:
                return
            with contextlib.suppress(InterruptedError):
                select.select(output.fds(), [], [], remaining)
            output.pump()
