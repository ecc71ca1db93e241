"""``loopkit run``: the supervisor (SPEC section 6).

Each iteration: BLOCKED.md? → ``required_env`` → ``preflight`` → agent (own process group,
``iteration_timeout``) → BLOCKED.md appeared? → verify → per-task failure counter →
escalate at ``max_verify_failures`` → ``done`` → ``pause``. While blocked it waits on a
folder watch — not a sleep loop — and resumes as soon as BLOCKED.md is gone or the open
request is answered, enforcing the request's ``timeout_default`` meanwhile.

Signal handlers only set events; every wait in here is on the one ``wake`` event, so a
stop, a child's exit and a file change are all acted on at once. State is saved to
``.loopkit/state.json`` at every step that matters, so a restart carries on.

:class:`Supervisor` owns its parts (:class:`~loopkit.supervisor.parts.Parts`) and its two
phases — one :class:`~loopkit.supervisor.iteration.Iteration` and one
:class:`~loopkit.supervisor.blocked.BlockedPhase` — and reads their
:class:`~loopkit.supervisor.parts.Step` results top-down. What it runs on are keyword
arguments with real defaults — the runner, what builds the escalator, the hub, the clock —
so the loop, an iteration and the blocked phase are tested in process with fakes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from loopkit import channels, clock, fleet, liveness, loops
from loopkit import config as config_mod
from loopkit.clock import SystemClock
from loopkit.errors import EXIT_OK, ConfigError
from loopkit.escalation import blockfile
from loopkit.escalation.escalator import Escalator
from loopkit.escalation.repair import repair
from loopkit.fleet import Hubs
from loopkit.fleet.publishing import CATCH_UP, Publishing
from loopkit.home import Registered
from loopkit.log import get_logger
from loopkit.supervisor.blocked import BlockedPhase
from loopkit.supervisor.containment import Containment, label, subreaper
from loopkit.supervisor.iteration import Iteration
from loopkit.supervisor.leftovers import stop_left_behind
from loopkit.supervisor.parts import Options, Parts, console
from loopkit.supervisor.pause import Controls
from loopkit.supervisor.runner import Runner
from loopkit.watch.folder import FolderWatch
from loopkit.watch.wake import Wake
from loopkit.workspace import Workspace
from loopkit.workspace.state import LoopStatus, SupervisorLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

    from loopkit.clock import Clock
    from loopkit.config import Config
    from loopkit.requests.hub import Hub
    from loopkit.supervisor.parts import EscalatorFactory, Step
    from loopkit.supervisor.runner import CommandRunner

log = get_logger("loopkit.supervisor")

__all__ = ["Options", "Supervisor"]


class Supervisor:
    """The loop, its lifecycle and its signals, over the phases it owns.

    ``runner`` runs the commands (default: a :class:`~loopkit.supervisor.runner.Runner`,
    its commands contained and echoed to stdout); its ``wake`` and ``stop`` are the ones
    the supervisor sets and waits on. ``escalator`` builds the escalator for a config (again
    on each reload). ``hubs`` are the process's hubs (one per fleet DSN; built here when not
    handed in), ``hub`` the workspace's own (default: the one its Config names). ``clock``
    is the time every phase reads and waits on (default: :class:`SystemClock`); a fake
    clock goes with a fake runner, since a real command runs in real time.
    """

    def __init__(
        self,
        config: Config,
        *,
        options: Options | None = None,
        runner: CommandRunner | None = None,
        escalator: EscalatorFactory = Escalator,
        hubs: Hubs | None = None,
        hub: Hub | None = None,
        clock: Clock | None = None,
    ) -> None:
        workspace = Workspace.of(config)
        echo = console(config)
        containment = Containment(record=workspace.running_file, name=label(workspace.root))
        if runner is None:
            runner = Runner(
                wake=Wake(),
                stop=threading.Event(),
                kill_grace=config.loop.kill_grace,
                echo=echo.write,
                containment=containment,
            )
        self.clock = clock or SystemClock()
        self.parts = Parts(
            config,
            options or Options(),
            runner=runner,
            containment=containment,
            escalator=escalator,
            echo=echo,
            hubs=hubs if hubs is not None else Hubs(),
            hub=hub,
            clock=self.clock,
        )
        self._closes_hubs = hubs is None  # what it built, it closes
        self.lock = SupervisorLock(self.parts.workspace)
        self.reload = threading.Event()
        self.iteration = Iteration(self.parts)
        self.blocked = BlockedPhase(self.parts, print_head=sys.stdout.write)
        self.controls = Controls(self.parts, self.request_stop)  # pause, resume, stop

    # --- signals --------------------------------------------------------------------------

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """Ask the supervisor to stop (what the SIGINT/SIGTERM handlers do)."""
        self.parts.signal_received = signum
        self.parts.stop.set()
        self.parts.wake.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            self.reload.set()
        else:
            self.request_stop(signum)

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        if not self.parts.options.install_signals:
            yield
            return
        previous = {
            sig: signal.signal(sig, self._on_signal)
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # --- the loop -------------------------------------------------------------------------

    def run(self) -> int:
        parts = self.parts
        with self.lock.held(), self._signals(), self._in_workspace(), subreaper():
            folders = [parts.workspace.root, parts.workspace.requests_dir]
            try:
                with FolderWatch(folders, parts.wake) as watch, following(parts), self.controls:
                    parts.watch = watch
                    try:
                        return self._loop()
                    finally:
                        parts.runner.close()  # a process made ready for a next command
                        parts.watch = None
                        parts.close()
            finally:  # after the loop's last row went out (following's end)
                if self._closes_hubs:
                    parts.hubs.close()

    @contextlib.contextmanager
    def _in_workspace(self) -> Iterator[None]:
        """Run from the workspace folder, so commands can be spawned without a chdir."""
        before = os.getcwd()
        os.chdir(self.parts.workspace.root)
        try:
            yield
        finally:
            os.chdir(before)

    def _loop(self) -> int:
        parts = self.parts
        parts.state = parts.state_file.load()
        # An older supervisor kept the skipped tasks in state.json: they move to skipped.json.
        for task in parts.state.extra.pop("skipped_tasks", None) or []:
            parts.skipped.add(str(task), skipped_at=None, request_id=None)
        parts.state.pid = os.getpid()
        parts.state.pid_start = liveness.start_ticks(os.getpid())
        parts.state.started_at = clock.iso_seconds(self.clock.now())
        parts.state.status = LoopStatus.RUNNING
        parts.save()
        log.info("started", pid=os.getpid(), msg=f"supervising {parts.workspace.root}")
        left = stop_left_behind(
            parts.containment, grace=parts.config.loop.kill_grace, stop=parts.stop
        )
        if left.count:
            log.warning("left_behind", count=left.count, by=left.supervisor, msg=left.message())
        # A block a crash left half-raised stands again; the blocked phase sends it.
        repair(parts.escalator, send=False)
        step = self.blocked.apply_answered()
        if step.action == "exit":  # the answer was the supervisor's own Abort
            return _code(step)
        resumed = False
        done = 0
        limit = parts.options.max_iterations
        while True:
            if parts.stop.is_set():
                return _code(parts.stopped())
            if self.reload.is_set():
                self._reload()
            # A block we know of counts even if its file went before we got to wait on it.
            if blockfile.state(parts.workspace.blocked) != "absent" or parts.state.open_request:
                if not parts.options.exit_on_block:
                    # The next iteration's process is made now, in its cgroup, so the slow
                    # join is paid while the loop waits (SPEC section 20).
                    parts.runner.ahead(str(parts.workspace.root), self.iteration.ahead_env())
                step = self.blocked.run(resend=not resumed)
                resumed = True
                if step.action == "exit":
                    return _code(step)
                continue
            resumed = True
            if limit is not None and done >= limit:
                return _code(
                    parts.finish(LoopStatus.IDLE, EXIT_OK, f"stopped after {done} iteration(s)")
                )
            held = self.controls.hold()  # paused: the last iteration ended, the next waits
            if held == "stopped":
                return _code(parts.stopped())
            if held == "resumed":
                continue  # look again: a block or a stop may have come meanwhile
            done += 1
            step = self.iteration.run()
            if step.action == "exit":
                return _code(step)
            last = limit is not None and done >= limit
            # No pause after raising a block, even when it is already answered and gone.
            blocked = (
                blockfile.state(parts.workspace.blocked) != "absent" or parts.state.open_request
            )
            if not last and not blocked and self._pause():
                return _code(parts.stopped())

    def _reload(self) -> None:
        self.reload.clear()
        try:
            new = config_mod.load(self.parts.workspace.root)
            unusable = channels.unusable(new)
            if unusable:  # as at start: never switch to a channel that reaches nobody
                raise ConfigError(unusable)
        except ConfigError as exc:
            log.error("reload_failed", error=str(exc), msg=f"config not reloaded: {exc}")
            return
        self.parts.use(new)
        log.info("reloaded", msg="config reloaded (SIGHUP)")

    def _pause(self) -> bool:
        """Sleep ``pause``; True when a stop came in meanwhile. A pause order ends the sleep
        (the loop's head holds from then on): the iteration is over, so it is paused now."""
        stop, wake = self.parts.stop, self.parts.wake
        end = self.clock.monotonic() + self.parts.config.loop.pause
        while not stop.is_set():
            remaining = end - self.clock.monotonic()
            if remaining <= 0 or self.controls.pausing():
                return False
            if self.clock.wait(wake, remaining):  # a stop, a steering order, a file
                wake.clear()
        return True


@contextlib.contextmanager
def following(parts: Parts) -> Iterator[None]:
    """With a fleet, answers and steering orders given on other machines are applied here
    while we run, and this loop's row is published at each change of its state and each
    beat — and once more as it ends (:func:`loopkit.fleet.follow_answers`; without a fleet
    there is nothing to follow)."""
    stop = threading.Event()
    own = Registered(parts.workspace.root, parts.workspace.repo_name(), "")
    publishing = Publishing(loops.describe, own=own, changed=parts.changed)
    followed = fleet.follow_answers(
        parts.hubs, parts.stores, stop, parts.wake.set, publishing=publishing
    )
    if followed:
        # A pause (or a note) given through the fleet while no loopkit ran here lands
        # before the first iteration; a database that is gone costs one connect timeout.
        publishing.caught_up.wait(CATCH_UP)
    try:
        yield
    finally:
        stop.set()
        if followed:
            fleet.publish_last(parts.hubs, parts.store.hub, publishing)


def _code(step: Step) -> int:
    assert step.code is not None, step
    return step.code
