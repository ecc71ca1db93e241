"""``loopkit run``: the supervisor (SPEC section 6).

Each iteration: BLOCKED.md? → ``required_env`` → ``preflight`` → agent (own process group,
``iteration_timeout``) → BLOCKED.md appeared? → verify → per-task failure counter →
escalate at ``max_verify_failures`` → ``done`` → ``pause``. While blocked it waits on a
folder watch — not a sleep loop — and resumes as soon as BLOCKED.md is gone or the open
request is answered, enforcing the request's ``timeout_default`` meanwhile.

Signal handlers only set events; every wait in here is on the one ``wake`` event, so a
stop, a child's exit and a file change are all acted on at once. State is saved to
``.loopkit/state.json`` at every step that matters, so a restart carries on.

The steps of one iteration live in :mod:`loopkit.iteration`, the wait while blocked in
:mod:`loopkit.blocking`, the parts and state they share in :mod:`loopkit.core`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from types import FrameType
from typing import Any

from loopkit import channels, clock
from loopkit.errors import EXIT_OK, ConfigError
from loopkit.escalation import blockfile
from loopkit.escalation.escalator import Escalator
from loopkit.log import get_logger
from loopkit.requests.store import RequestStore
from loopkit.supervisor.blocked import BlockedSteps
from loopkit.supervisor.core import Options
from loopkit.supervisor.iteration import IterationSteps
from loopkit.watch.folder import FolderWatch
from loopkit.workspace import Workspace

log = get_logger("loopkit.supervisor")

__all__ = ["Options", "Supervisor"]


class Supervisor(IterationSteps, BlockedSteps):
    """The loop, its lifecycle and its signals; one iteration is in :mod:`loopkit.iteration`,
    the wait while blocked in :mod:`loopkit.blocking`."""

    # --- signals --------------------------------------------------------------------------

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """Ask the supervisor to stop (what the SIGINT/SIGTERM handlers do)."""
        self.signal_received = signum
        self.stop.set()
        self.wake.set()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            self.reload.set()
        else:
            self.request_stop(signum)

    @contextlib.contextmanager
    def _signals(self) -> Any:
        if not self.options.install_signals:
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
        with self.lock.held(), self._signals(), self._in_workspace():
            watch = FolderWatch([self.workspace.root, self.workspace.requests_dir], self.wake)
            with watch:
                self._watch = watch
                try:
                    return self._loop()
                finally:
                    self._watch = None
                    if self._poller is not None:
                        self._poller.stop()

    @contextlib.contextmanager
    def _in_workspace(self) -> Any:
        """Run from the workspace folder, so commands can be spawned without a chdir."""
        before = os.getcwd()
        os.chdir(self.workspace.root)
        try:
            yield
        finally:
            os.chdir(before)

    def _loop(self) -> int:
        self.state = self.state_file.load()
        self.state.pid = os.getpid()
        self.state.started_at = clock.iso_seconds()
        self.state.status = "running"
        self._save()
        log.info("started", pid=os.getpid(), msg=f"supervising {self.workspace.root.resolve()}")
        resumed = False
        done = 0
        while True:
            if self.stop.is_set():
                return self._stopped()
            if self.reload.is_set():
                self._do_reload()
            # A block we know of counts even if its file went before we got to wait on it.
            if blockfile.state(self.workspace.blocked) != "absent" or self.state.open_request:
                code = self._blocked(resend=not resumed)
                resumed = True
                if code is not None:
                    return code
                continue
            resumed = True
            if self.options.max_iterations is not None and done >= self.options.max_iterations:
                return self._finish("idle", EXIT_OK, f"stopped after {done} iteration(s)")
            done += 1
            code = self._iteration()
            if code is not None:
                return code
            last = self.options.max_iterations is not None and done >= self.options.max_iterations
            if not last and blockfile.state(self.workspace.blocked) == "absent" and self._pause():
                return self._stopped()

    def _do_reload(self) -> None:
        self.reload.clear()
        try:
            new = self._reload_config()
            unusable = channels.unusable(new)
            if unusable:  # as at start: never switch to a channel that reaches nobody
                raise ConfigError(unusable)
        except ConfigError as exc:
            log.error("reload_failed", error=str(exc), msg=f"config not reloaded: {exc}")
            return
        self.config = new
        self.workspace = Workspace.of(new)
        self.store = RequestStore(self.workspace)
        self.escalator = Escalator(new, store=self.store)
        self.runner.kill_grace = new.loop.kill_grace
        if self._poller is not None:  # the phone poller restarts, on its next use, as set now
            self._poller.stop()
            self._poller = None
        log.info("reloaded", msg="config reloaded (SIGHUP)")

    def _pause(self) -> bool:
        """Sleep ``pause``; True when a stop came in meanwhile."""
        end = time.monotonic() + self.config.loop.pause
        while not self.stop.is_set():
            remaining = end - time.monotonic()
            if remaining <= 0:
                return False
            self.stop.wait(remaining)
        return True
