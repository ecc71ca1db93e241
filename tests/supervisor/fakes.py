"""Fakes for the supervisor's seams (``Supervisor(config, *, runner=…, clock=…)``): a clock
that moves only when something waits on it, and a runner that plays scripted commands on it.

Both are at least as strict as the real thing — a fake kinder than what it stands for is a
test that cannot fail:

- :class:`FakeClock` keeps ``Event.wait``'s contract: a wait returns True as soon as its
  event is set (by a scheduled action, or by another thread before it), else False after
  exactly the seconds asked. A wait with no end that nothing can end, and a loop that lets
  a day of fake time pass, fail the test instead of hanging it.
- :class:`FakeRunner` keeps :meth:`loopkit.supervisor.runner.Runner.run`'s contract: it
  looks at its exit, ``stop``, the timeout and ``interrupt`` in the real one's order; a
  stopped, timed-out or interrupted command gets SIGTERM and, if it ignores that, SIGKILL
  after ``kill_grace`` (the fake time passes); :class:`Finished` carries the same ending,
  exit code (None when killed by a signal), duration, tail and error text. A command it
  has no script for, or that runs more often than scripted, fails the test.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopkit.channels import Outcome
from loopkit.config import Command, Config, EscalationConfig, LoopConfig, StuckConfig
from loopkit.escalation.escalator import Escalator
from loopkit.message import Note
from loopkit.requests.store import RequestStore
from loopkit.supervisor.loop import Options, Supervisor
from loopkit.supervisor.parts import EscalatorFactory
from loopkit.supervisor.runner import (
    HEAD_BYTES,
    TAIL_BYTES,
    Conversation,
    Ending,
    Finished,
    LogSink,
    argv_of,
    describe,
)
from loopkit.watch.wake import Wake

if TYPE_CHECKING:
    from loopkit.clock import Waitable

ORIGIN = 5000.0  # the fake monotonic time at the start: any number, as the real one's is
DAY = 24 * 3600.0


class FakeClock:
    """``monotonic()``, ``now()`` and ``wait(event, seconds)`` on a time only waits move.

    ``at(seconds, action)`` runs ``action`` when the fake time reaches ``seconds`` after
    the start — what a human, a signal or an editor does meanwhile.
    """

    def __init__(self, *, wall: datetime | None = None, limit: float = DAY) -> None:
        self.elapsed = 0.0
        self.wall = wall or datetime.now(UTC)  # the wall-clock time at the start
        self.limit = limit
        self._due: list[tuple[float, int, Callable[[], object]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return ORIGIN + self.elapsed

    def now(self) -> datetime:
        return self.wall + timedelta(seconds=self.elapsed)

    def at(self, seconds: float, action: Callable[[], object]) -> None:
        assert seconds >= self.elapsed, f"{seconds} s is past ({self.elapsed} s now)"
        heapq.heappush(self._due, (seconds, next(self._order), action))

    def after(self, seconds: float, action: Callable[[], object]) -> None:
        self.at(self.elapsed + seconds, action)

    def wait(self, event: Waitable, seconds: float | None) -> bool:
        if event.wait(0):
            return True
        end = None if seconds is None else self.elapsed + max(0.0, seconds)
        while self._due and (end is None or self._due[0][0] <= end):
            when, _, action = heapq.heappop(self._due)
            self._move_to(when)
            action()
            if event.wait(0):
                return True
        if end is None:
            raise AssertionError("a wait without end that nothing is scheduled to end")
        self._move_to(end)
        return event.wait(0)

    def _move_to(self, when: float) -> None:
        self.elapsed = max(self.elapsed, when)
        if self.elapsed > self.limit:
            raise AssertionError(
                f"{self.limit:g} s of fake time passed: the loop never got where the test "
                "expected it to"
            )


@dataclass(frozen=True, slots=True)
class Call:
    """One run of a command, as the fake runner was asked for it."""

    name: str  # the command as configured (describe())
    env: Mapping[str, str]
    cwd: str
    timeout: float | None
    at: float  # fake seconds since the start


@dataclass(frozen=True, slots=True)
class Run:
    """What one run of a command does, in fake time."""

    exit_code: int = 0
    takes: float = 1.0  # seconds until it exits by itself
    output: str = ""
    does: Callable[[Call], object] | None = None  # at its start: write files, read its env
    on_term: int | None = None  # its exit code when it handles SIGTERM; None: SIGTERM kills it
    ignores_term: bool = False  # then SIGKILL after kill_grace, unless it exits before
    missing: bool = False  # its program is not there: it never starts


Script = Run | Sequence[Run] | Callable[[Call], Run]


@dataclass
class FakeInput:
    """What a conversation writes to the fake agent's stdin, kept."""

    written: bytearray = field(default_factory=bytearray)
    closed: bool = False
    closing: bool = False  # as AgentInput: closed by the conversation
    broken: bool = False  # as AgentInput: the agent closed its end

    def write(self, data: bytes) -> None:
        if not self.closing:
            self.written += data

    def close(self) -> None:
        self.closed = self.closing = True


@dataclass
class FakeRunner:
    """Plays each configured command's :class:`Run` on ``clock``; ``calls`` lists every run."""

    clock: FakeClock
    commands: Mapping[str, Script]
    kill_grace: float = 10.0
    max_output: int = 50 * 1024 * 1024
    wake: Wake = field(default_factory=Wake)
    stop: threading.Event = field(default_factory=threading.Event)
    calls: list[Call] = field(default_factory=list)
    inputs: list[FakeInput] = field(default_factory=list)  # each conversation's stdin

    def names(self) -> list[str]:
        return [call.name for call in self.calls]

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
        name = describe(command)
        assert name in self.commands, f"the fake runner has no script for {name!r}"
        assert Path(cwd).is_dir(), f"cwd {cwd} is not a folder"
        assert all(isinstance(v, str) for v in env.values()), env
        call = Call(name, dict(env), cwd, timeout, self.clock.elapsed)
        self.calls.append(call)
        play = self._play(call)
        if play.missing and isinstance(command, str):
            # As the real Runner has it: /bin/sh starts, and says it found no such program.
            tail = f"/bin/sh: 1: {command.split()[0]}: not found\n"
            return Finished("exited", 127, 0.0, tail, None)
        if play.missing:
            reason = f"No such file or directory: {argv_of(command)[0]!r}"
            return Finished("not-started", None, 0.0, "", reason)
        started = self.clock.monotonic()
        if play.does is not None:
            play.does(call)
        output = play.output.encode()
        if conversation is not None:  # its output is the agent's stdout: events
            said: list[bytes] = []
            self.inputs.append(FakeInput())
            conversation.opened(self.inputs[-1], said.append)  # type: ignore[arg-type]
            conversation.received(output)
            conversation.closed()
            output = b"".join(said)
        if log is not None and output:
            log.write(output)
        ending, code = self._wait(play, started, timeout, interrupt, interrupt_grace, recheck)
        error = None
        if ending == "timeout":
            error = f"killed after {timeout:g} s (iteration_timeout)"
        elif ending in ("stopped", "interrupted"):
            error = "stopped by loopkit"
        tail = output[-TAIL_BYTES:].decode("utf-8", "replace")
        head = output[:HEAD_BYTES].decode("utf-8", "replace")
        duration = self.clock.monotonic() - started
        return Finished(ending, code if code is not None and code >= 0 else None, duration,
                        tail, error, head)  # fmt: skip

    def ahead(self, cwd: str, env: Mapping[str, str]) -> None:
        """Nothing is made ahead here: a fake command starts in no time."""

    def close(self) -> None:
        pass

    def _play(self, call: Call) -> Run:
        script = self.commands[call.name]
        if isinstance(script, Run):
            return script
        if callable(script):
            return script(call)
        runs = sum(1 for c in self.calls if c.name == call.name)
        assert runs <= len(script), f"{call.name!r} ran {runs} times; scripted {len(script)}"
        return script[runs - 1]

    def _wait(
        self,
        play: Run,
        started: float,
        timeout: float | None,
        interrupt: Callable[[], bool] | None,
        interrupt_grace: float,
        recheck: float | None,
    ) -> tuple[Ending, int | None]:
        """As :meth:`Runner._wait`: exit, stop, timeout, interrupt — looked at in that order."""
        exits_at = started + play.takes
        deadline = started + timeout if timeout else None
        interrupt_at: float | None = None
        while True:
            self.wake.clear()
            now = self.clock.monotonic()
            if now >= exits_at:
                return "exited", play.exit_code
            if self.stop.is_set():
                return "stopped", self._terminate(play, exits_at)
            if deadline is not None and now >= deadline:
                return "timeout", self._terminate(play, exits_at)
            if interrupt is not None and interrupt_at is None and interrupt():
                interrupt_at = now + interrupt_grace
            if interrupt_at is not None and now >= interrupt_at:
                return "interrupted", self._terminate(play, exits_at)
            waits = [d - now for d in (exits_at, deadline, interrupt_at) if d is not None]
            if interrupt is not None and interrupt_at is None and recheck:
                waits.append(recheck)
            self.clock.wait(self.wake, min(waits))

    def _terminate(self, play: Run, exits_at: float) -> int | None:
        """SIGTERM; a command that ignores it has ``kill_grace`` to exit before SIGKILL."""
        if not play.ignores_term:
            return play.on_term
        killed_at = self.clock.monotonic() + self.kill_grace
        never = threading.Event()
        if exits_at <= killed_at:
            self.clock.wait(never, exits_at - self.clock.monotonic())
            return play.exit_code
        self.clock.wait(never, killed_at - self.clock.monotonic())
        return None


@dataclass
class RecordingChannel:
    """A channel that delivers every message (``channel_factory``): what was sent, in order."""

    sent: list[Note] = field(default_factory=list)
    name: str = "recording"

    def send(self, message: Note) -> Outcome:
        self.sent.append(message)
        return Outcome(ok=True, status=200)

    def problems(self) -> list[str]:
        return []


def escalator(channel: RecordingChannel | None = None) -> EscalatorFactory:
    """The real escalator, sending to ``channel`` (if any) and naming no commit (the commit
    is a ``git`` subprocess)."""

    def build(config: Config, *, store: RequestStore) -> Escalator:
        factory = (lambda name: channel) if channel is not None else None
        return Escalator(config, store=store, channel_factory=factory, commit=lambda ws: None)

    return build


# The stuck detector off: the tests of other parts of the loop play agents that change
# nothing on purpose (tests/supervisor/test_stuck_inprocess.py turns it on).
STUCK_OFF = StuckConfig(no_progress=0, same_error=0, repeated_output=0, crash_loop=0)


def loop_config(ws: Path, *, ladder: tuple[str, ...] = ("none",), escalation: Any = None,
                stuck: StuckConfig = STUCK_OFF, **loop: Any) -> Config:  # fmt: skip
    """A workspace whose agent, verify (and ``done``, when given) are the commands named so."""
    values: dict[str, Any] = {"agent": "agent", "verify": "verify", "pause": 0.0, **loop}
    settings = EscalationConfig(ladder=ladder, **(escalation or {}))
    return Config(workspace=ws.resolve(), loop=LoopConfig(**values), escalation=settings,
                  stuck=stuck)  # fmt: skip


def supervisor(
    config: Config,
    clock: FakeClock,
    runner: FakeRunner,
    *,
    channel: RecordingChannel | None = None,
    **options: Any,
) -> Supervisor:
    """A supervisor on the fakes: no signal handlers, its escalator spawning nothing."""
    return Supervisor(
        config,
        options=Options(install_signals=False, **options),
        runner=runner,
        escalator=escalator(channel),
        clock=clock,
    )
