"""Running one loop command: its own session and process group, output teed, bounded.

A command is a shell string (``/bin/sh -c``) or an argv tuple (no shell). It starts in a
new session, so the whole group — grandchildren included — can be signalled at once. Its
output (stdout and stderr, merged) streams to the console and to the iteration log while a
bounded tail is kept for error messages.

The caller's ``wake`` event is the only thing the main thread waits on: the child's exit,
a stop request (a signal handler sets it) and folder changes all set it, so a stop is
acted on at once. On timeout or stop the group gets SIGTERM, then SIGKILL after
``kill_grace``. Anything left in the group after the leader exits is killed too: no orphan
outlives its iteration.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import BinaryIO, Literal

from loopkit.config import Command

TAIL_BYTES = 8192
Ending = Literal["exited", "timeout", "stopped", "interrupted", "not-started"]


@dataclass(frozen=True, slots=True)
class Finished:
    ending: Ending
    exit_code: int | None  # None when it never started or was killed by a signal
    duration: float
    tail: str  # the last TAIL_BYTES of output, decoded
    error: str | None = None  # why it did not start, or how it ended when not by itself

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


class _Tee(threading.Thread):
    def __init__(self, fd: int, sinks: list[Callable[[bytes], None]]) -> None:
        super().__init__(daemon=True, name="loopkit-tee")
        self.fd = fd
        self.sinks = sinks
        self.tail: deque[bytes] = deque()
        self.tail_size = 0

    def run(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                for sink in self.sinks:
                    with contextlib.suppress(Exception):
                        sink(chunk)
                self.tail.append(chunk)
                self.tail_size += len(chunk)
                while self.tail_size - len(self.tail[0]) >= TAIL_BYTES:
                    self.tail_size -= len(self.tail.popleft())
        finally:
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def text(self) -> str:
        return b"".join(self.tail)[-TAIL_BYTES:].decode("utf-8", "replace")


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class Runner:
    """Runs commands for the supervisor. ``stop`` and ``wake`` are owned by the caller."""

    def __init__(
        self,
        *,
        wake: threading.Event,
        stop: threading.Event,
        kill_grace: float = 10.0,
        echo: Callable[[bytes], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.wake = wake
        self.stop = stop
        self.kill_grace = kill_grace
        self.echo = echo
        self.clock = clock
        self.current_pgid: int | None = None

    def run(
        self,
        command: Command,
        *,
        cwd: str,
        env: Mapping[str, str],
        timeout: float | None,
        log: BinaryIO | None = None,
        interrupt: Callable[[], bool] | None = None,
        interrupt_grace: float = 0.0,
        recheck: float | None = None,
    ) -> Finished:
        """Run ``command`` to its end, a timeout, a stop, or ``interrupt()`` + grace.

        ``interrupt`` is looked at whenever ``wake`` is set, and at least every ``recheck``
        seconds when given (a polling folder watch sets no events).
        """
        started = self.clock()
        read_fd, write_fd = os.pipe()
        try:
            proc = subprocess.Popen(
                argv_of(command),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            os.close(write_fd)
            reason = f"{exc.strerror or exc}: {argv_of(command)[0]!r}"
            return Finished("not-started", None, 0.0, "", reason)
        os.close(write_fd)
        self.current_pgid = proc.pid
        sinks: list[Callable[[bytes], None]] = []
        if self.echo:
            sinks.append(self.echo)
        if log is not None:
            log_file = log

            def write_log(chunk: bytes) -> None:
                log_file.write(chunk)

            sinks.append(write_log)
        tee = _Tee(read_fd, sinks)
        tee.start()
        exited = threading.Event()

        def reap() -> None:
            proc.wait()
            exited.set()
            self.wake.set()

        threading.Thread(target=reap, daemon=True, name="loopkit-reap").start()
        ending = self._wait(proc.pid, exited, started, timeout, interrupt, interrupt_grace, recheck)
        # The leader is gone; whatever it left in its group goes with it.
        _signal_group(proc.pid, signal.SIGKILL)
        self.current_pgid = None
        tee.join(timeout=1.0)
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
            tee.text(),
            error,
        )

    def _wait(
        self,
        pgid: int,
        exited: threading.Event,
        started: float,
        timeout: float | None,
        interrupt: Callable[[], bool] | None,
        interrupt_grace: float,
        recheck: float | None,
    ) -> Ending:
        deadline = started + timeout if timeout else None
        interrupt_at: float | None = None
        while True:
            self.wake.clear()
            if exited.is_set():
                return "exited"
            now = self.clock()
            if self.stop.is_set():
                self._terminate(pgid, exited)
                return "stopped"
            if deadline is not None and now >= deadline:
                self._terminate(pgid, exited)
                return "timeout"
            if interrupt is not None and interrupt_at is None and interrupt():
                interrupt_at = now + interrupt_grace
            if interrupt_at is not None and now >= interrupt_at:
                self._terminate(pgid, exited)
                return "interrupted"
            waits = [d - now for d in (deadline, interrupt_at) if d is not None]
            if interrupt is not None and interrupt_at is None and recheck:
                waits.append(recheck)
            self.wake.wait(min(waits) if waits else None)

    def _terminate(self, pgid: int, exited: threading.Event) -> None:
        """SIGTERM to the group, SIGKILL after the grace period; returns once reaped."""
        _signal_group(pgid, signal.SIGTERM)
        if not exited.wait(self.kill_grace):
            _signal_group(pgid, signal.SIGKILL)
            exited.wait()
