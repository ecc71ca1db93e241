"""``loopkit run``: the supervisor (SPEC section 6).

Each iteration: BLOCKED.md? → ``required_env`` → ``preflight`` → agent (own process group,
``iteration_timeout``) → BLOCKED.md appeared? → verify → per-task failure counter →
escalate at ``max_verify_failures`` → ``done`` → ``pause``. While blocked it waits on a
folder watch — not a sleep loop — and resumes as soon as BLOCKED.md is gone or the open
request is answered, enforcing the request's ``timeout_default`` meanwhile.

Signal handlers only set events; every wait in here is on the one ``wake`` event, so a
stop, a child's exit and a file change are all acted on at once. State is saved to
``.loopkit/state.json`` at every step that matters, so a restart carries on.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any

from loopkit import atomicfile, blocked, clock, triggers
from loopkit import config as config_mod
from loopkit.answers import is_human_decision, unblocked_by_hand
from loopkit.blockwait import Outcome, wait_unblock
from loopkit.config import Command, Config
from loopkit.errors import (
    EXIT_ABORTED,
    EXIT_BLOCKED,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    ConfigError,
    LoopkitError,
)
from loopkit.escalation import Escalation, Escalator, message_for
from loopkit.events import get_logger
from loopkit.iterlog import IterationLog, prune
from loopkit.message import fold
from loopkit.process import Finished, Runner, describe
from loopkit.requests import Request, RequestStore
from loopkit.state import State, StateFile, SupervisorLock
from loopkit.tasks import current_task
from loopkit.wake import Wake
from loopkit.watcher import FolderWatch
from loopkit.workspace import Workspace

log = get_logger(__name__)

PREFLIGHT_TRIES = 3
PREFLIGHT_TIMEOUT = 60.0
KEEP_LOGS = 500
PROGRESS_EVERY = 0.5  # seconds


def _stdout_echo(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


@dataclass(frozen=True, slots=True)
class Options:
    exit_on_block: bool = False
    max_iterations: int | None = None
    install_signals: bool = True


class Supervisor:
    def __init__(
        self,
        config: Config,
        *,
        options: Options | None = None,
        escalator: Escalator | None = None,
        reload: Callable[[], Config] | None = None,
        echo: Callable[[bytes], None] | None = _stdout_echo,
        print_head: Callable[[str], None] | None = None,
    ) -> None:
        config = replace(config, workspace=config.workspace.resolve())
        self.config = config
        self.options = options or Options()
        self.workspace = Workspace.of(config)
        self.store = RequestStore(self.workspace)
        self.escalator = escalator or Escalator(config)
        self._reload_config = reload or (lambda: config_mod.load(self.workspace.root))
        self.print_head = print_head or (lambda text: sys.stdout.write(text))
        self.state_file = StateFile(self.workspace)
        self.lock = SupervisorLock(self.workspace)
        self.wake = Wake()
        self.stop = threading.Event()
        self.reload = threading.Event()
        self.signal_received: int | None = None
        self.runner = Runner(
            wake=self.wake, stop=self.stop, kill_grace=config.loop.kill_grace, echo=echo
        )
        self.state = State()
        self._watch: FolderWatch | None = None
        self._poller: Any = None
        self._log_warned = False
        # The environment children inherit, read once (decoding os.environ is not free).
        self._base_env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("LOOPKIT_DECISION", "LOOPKIT_DECISION_REQUEST")
        }
        self._iteration_saved = -PROGRESS_EVERY
        self._announced_folder = False

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

    def _phone(self) -> Any:
        """The Telegram answer poller, when the channel is telegram (started on first use)."""
        channels = self.config.channels
        if self.config.escalation.channel != "telegram" or not (
            channels.telegram_token and channels.telegram_chat
        ):
            return None
        if self._poller is None:
            from loopkit.channels.telegram_updates import UpdatePoller

            self._poller = UpdatePoller(self.config)
            self._poller.start()
        return self._poller

    def _announce(self, record: Request, *, now: bool = False) -> None:
        """Edit the phone's message to show how a block ended (a tap edits it itself)."""
        phone = self._phone()
        if phone is None or record.is_open or (record.resolution or {}).get("via") == "telegram":
            return
        if now:
            phone.show_outcome(record)
        else:
            threading.Thread(target=phone.show_outcome, args=(record,), daemon=True).start()

    def _save(self, *, durable: bool = True) -> None:
        self.state_file.save(self.state, durable=durable)

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
            if blocked.state(self.workspace.blocked) != "absent" or self.state.open_request:
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
            if blocked.state(self.workspace.blocked) == "absent" and self._pause():
                return self._stopped()

    def _finish(self, status: str, code: int, why: str) -> int:
        self.state.status = status
        self.state.last_exit = code
        self._save()
        log.info("exit", status=status, code=code, msg=why)
        return code

    def _stopped(self) -> int:
        code = EXIT_SIGINT if self.signal_received == signal.SIGINT else EXIT_SIGTERM
        name = signal.Signals(self.signal_received or signal.SIGTERM).name
        return self._finish("stopped", code, f"stopped by {name}")

    def _do_reload(self) -> None:
        self.reload.clear()
        try:
            new = self._reload_config()
        except ConfigError as exc:
            log.error("reload_failed", error=str(exc), msg=f"config not reloaded: {exc}")
            return
        self.config = new
        self.workspace = Workspace.of(new)
        self.escalator = Escalator(new)
        self.runner.kill_grace = new.loop.kill_grace
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

    # --- one iteration --------------------------------------------------------------------

    def _iteration(self) -> int | None:
        loop = self.config.loop
        state = self.state
        state.iteration += 1
        task = current_task(
            self.workspace.root, loop.task_file, loop.task_pattern, state.skipped_tasks
        )
        changed = task != state.task or state.status != "running"
        if task != state.task:
            state.task, state.failures, state.failed_iterations = task, 0, []
        state.status = "running"
        now = time.monotonic()
        if changed or now - self._iteration_saved >= PROGRESS_EVERY:
            self._iteration_saved = now
            # The iteration number alone is progress, not state: saved without fsync and at
            # most every PROGRESS_EVERY s, so a tight loop is not a write loop. A crash may
            # re-run an interrupted iteration under its number; counters are never lost.
            self._save(durable=changed)
        label = f" · task: {fold(task, 60)}" if task else ""
        log.info(
            "iteration",
            iteration=state.iteration,
            task=task,
            msg=f"iteration {state.iteration}{label}",
        )

        missing = [name for name in loop.required_env if not os.environ.get(name)]
        if missing:
            self._escalate(
                triggers.missing_env(
                    names=missing, task=task, iteration=state.iteration, pid=os.getpid()
                )
            )
            return None
        with self._iteration_log() as log_file:
            for command in loop.preflight:
                if not self._preflight(command, log_file):
                    return self._stopped() if self.stop.is_set() else None
            return self._agent_and_verify(task, log_file)

    @contextlib.contextmanager
    def _iteration_log(self) -> Any:
        folder = self.workspace.state_dir / "logs"
        handle = IterationLog(folder, self.state.iteration)
        try:
            yield handle
        finally:
            handle.close()
            if handle.broken and not self._log_warned:
                self._log_warned = True
                log.warning("log_unwritable", msg=f"cannot write iteration logs: {handle.broken}")
            if self.state.iteration % 50 == 0:
                prune(folder, KEEP_LOGS)

    def _run(self, name: str, command: Command, log_file: IterationLog, **kwargs: Any) -> Finished:
        env = self._child_env()
        log_file.begin(f"--- {name}: {describe(command)}")
        result = self.runner.run(
            command, cwd=str(self.workspace.root), env=env, log=log_file, **kwargs
        )
        code = result.exit_code if result.exit_code is not None else result.ending
        log_file.end(f"--- {name}: {code} after {result.duration:.2f} s")
        if result.ending == "not-started":
            log.error(
                "command_not_started",
                command=name,
                error=result.error,
                msg=f"{name} could not start: {result.error} (check [loop] {name})",
            )
        return result

    def _child_env(self) -> dict[str, str]:
        env = dict(self._base_env)
        env["LOOPKIT_WORKSPACE"] = str(self.workspace.root)
        env["LOOPKIT_ITERATION"] = str(self.state.iteration)
        if self.state.task:
            env["LOOPKIT_TASK"] = self.state.task
        decision = self.state.pending_decision
        if decision:
            env["LOOPKIT_DECISION"] = str(decision.get("parsed_decision") or "")
            env["LOOPKIT_DECISION_REQUEST"] = str(decision.get("request_id") or "")
        return env

    def _preflight(self, command: Command, log_file: IterationLog) -> bool:
        tries: list[str] = []
        wait = self.config.loop.preflight_backoff  # before the 2nd try; doubled for the 3rd
        result: Finished | None = None
        for attempt in range(1, PREFLIGHT_TRIES + 1):
            if attempt > 1:
                tries[-1] += f"; waited {wait:g} s"
                if self.stop.wait(wait):
                    return False
                wait *= 2
            result = self._run("preflight", command, log_file, timeout=PREFLIGHT_TIMEOUT)
            if self.stop.is_set():
                return False
            if result.ok:
                return True
            tries.append(f"try {attempt}: {self._reason(result)}")
            log.warning("preflight_failed", attempt=attempt, msg=f"preflight failed: {tries[-1]}")
        assert result is not None
        self._escalate(
            triggers.dependency_down(
                command=describe(command),
                tries=tries,
                last_output=result.tail,
                task=self.state.task,
                iteration=self.state.iteration,
            )
        )
        return False

    @staticmethod
    def _reason(result: Finished) -> str:
        if result.ending == "exited":
            return f"exit {result.exit_code}"
        return result.error or result.ending

    def _agent_and_verify(self, task: str | None, log_file: IterationLog) -> int | None:
        loop = self.config.loop
        state = self.state
        if loop.agent is None:
            raise ConfigError(
                f"no [loop] agent in {self.workspace.root / 'loopkit.toml'}; set the agent "
                "command (`loopkit init --agent …` writes one)"
            )
        blocked_path = self.workspace.blocked
        interrupt = None
        if loop.stop_agent_on_block:
            interrupt = lambda: blocked.state(blocked_path) == "file"  # noqa: E731
        watch = self._watch
        agent = self._run(
            "agent",
            loop.agent,
            log_file,
            timeout=loop.iteration_timeout,
            interrupt=interrupt,
            interrupt_grace=loop.block_grace,
            recheck=watch.timeout_hint if watch else None,
        )
        state.pending_decision = None  # delivered to this run; the next one starts clean
        if self.stop.is_set():
            self._save()
            return self._stopped()
        if blocked.state(blocked_path) != "absent":
            log.info("agent_blocked", msg="the agent raised a block; verify skipped")
            self.state.status = "blocked"
            self.state.open_request = blocked.request_id_of(blocked_path)
            self._save()
            return None
        if agent.ending == "timeout" or agent.could_not_run:
            code = self._count_failure(task, f"agent {self._reason(agent)}", agent.tail)
        elif loop.verify is None:
            code = self._passed()
        else:
            verify = self._run("verify", loop.verify, log_file, timeout=loop.iteration_timeout)
            if self.stop.is_set():
                return self._stopped()
            if verify.ok:
                code = self._passed()
            else:
                code = self._count_failure(task, f"verify {self._reason(verify)}", verify.tail)
        if code is not None or blocked.state(blocked_path) != "absent":
            return code
        if loop.done is not None:
            done = self._run("done", loop.done, log_file, timeout=loop.iteration_timeout)
            if self.stop.is_set():
                return self._stopped()
            if done.ok:
                return self._finish("finished", EXIT_OK, "done: the done command exited 0")
        return None

    def _passed(self) -> int | None:
        if self.state.failures:
            log.info("verify_passed", msg="verify passed; failure count reset")
            self.state.failures, self.state.failed_iterations = 0, []
            self._save()
        return None

    def _count_failure(self, task: str | None, reason: str, output: str) -> int | None:
        state = self.state
        state.failures += 1
        sig = triggers.signature(output, 1)
        state.failed_iterations.append(
            {"iteration": state.iteration, "reason": reason, "signature": sig[0] if sig else ""}
        )
        state.failed_iterations = state.failed_iterations[-self.config.loop.max_verify_failures :]
        limit = self.config.loop.max_verify_failures
        log.warning(
            "failure",
            task=task,
            failures=state.failures,
            msg=f"{reason} ({state.failures}/{limit}{' on ' + repr(task) if task else ''})",
        )
        self._save()
        if state.failures >= limit:
            command = self.config.loop.verify or self.config.loop.agent or ""
            self._escalate(
                triggers.verify_failures(
                    task=task,
                    failures=state.failures,
                    command=describe(command),
                    last_output=output,
                    failed=state.failed_iterations,
                    iteration=state.iteration,
                )
            )
        return None

    def _escalate(self, escalation: Escalation) -> None:
        try:
            result = self.escalator.escalate(escalation)
        except LoopkitError as exc:
            # The block could not be raised (e.g. BLOCKED.md is a folder): never guess on.
            log.error("escalation_failed", error=str(exc), msg=f"cannot block: {exc}")
            raise
        self.state.open_request = result.joined or result.request.request_id
        self.state.status = "blocked"
        self._save()
        if not result.joined:
            channel = self.config.escalation.channel
            sent = {True: f"sent via {channel}", False: f"{channel}: not sent"}.get(
                bool(result.outcome and result.outcome.ok), ""
            )
            if result.outcome is None:
                sent = "channel none: BLOCKED.md is the escalation"
            text = message_for(result.request, self.workspace.repo_name()).text
            lines = "\n".join(f"    {line}" for line in text.splitlines())
            log.info(
                "message",
                request_id=result.request.request_id,
                msg=f"the question ({sent}):\n{lines}",
            )

    # --- blocked --------------------------------------------------------------------------

    def _blocked(self, *, resend: bool) -> int | None:
        path = self.workspace.blocked
        state = self.state
        if blocked.state(path) == "other":
            if not self._announced_folder:
                self._announced_folder = True
                log.error("blocked_not_a_file", msg=str(blocked.not_a_file(path)))
            if self.options.exit_on_block:
                raise blocked.not_a_file(path)
        present = blocked.state(path) != "absent"
        request_id = (blocked.request_id_of(path) if present else None) or state.open_request
        record = self._load(request_id)
        if not present:
            # Lifted before we waited on it (just after we raised it, or while we were down).
            return self._unblocked(record, removed=True)
        if record is not None and resend and record.is_open:
            # After a restart: a send cut short by a crash goes out once more, nothing else.
            self.escalator.resume_delivery(record)
        if state.status != "blocked" or state.open_request != request_id:
            state.status, state.open_request = "blocked", request_id
            self._save()
        if self.options.exit_on_block:
            with contextlib.suppress(OSError):
                self.print_head(blocked.read_head(path))
            return self._finish("blocked", EXIT_BLOCKED, "blocked (--exit-on-block)")
        question = f": {fold(record.prompt, 100)}" if record else ""
        log.info(
            "waiting",
            request_id=request_id,
            msg=f"blocked{question}; waiting for an answer or for {path.name} to go",
        )
        return self._wait(record)

    def _load(self, request_id: str | None) -> Request | None:
        if not request_id:
            return None
        try:
            return self.store.load(request_id)
        except LoopkitError as exc:
            log.warning("request_unreadable", msg=f"open request unreadable: {exc}")
            return None

    def _deadline(self, record: Request | None) -> float | None:
        if record is None or not record.is_open or record.extra.get("timed_out_at"):
            return None
        timeout = record.timeout_default or {}
        try:
            minutes = float(timeout.get("after_minutes") or 0)
            created = clock.parse_iso(record.created_at)
        except (TypeError, ValueError):
            return None
        if minutes <= 0:
            return None
        remaining = created.timestamp() + minutes * 60 - time.time()
        return time.monotonic() + max(0.0, remaining)

    def _answered_check(self, record: Request | None) -> Callable[[], bool]:
        if record is None:
            return lambda: False
        path = self.store.path(record.request_id)
        seen = [None]

        def answered() -> bool:
            try:
                stamp = path.stat().st_mtime_ns
            except OSError:
                return False
            if stamp == seen[0]:
                return False
            seen[0] = stamp  # type: ignore[call-overload]
            fresh = self._load(record.request_id)
            # Resolved, not merely closed: a request that expired with `abort` keeps its
            # block until a human answers it (late) or deletes BLOCKED.md.
            return fresh is not None and fresh.status == "resolved"

        return answered

    def _wait(self, record: Request | None) -> int | None:
        assert self._watch is not None
        path = self.workspace.blocked
        phone = self._phone()
        while True:
            if phone is not None:
                phone.active.set()  # long-poll Telegram for taps and replies meanwhile
            try:
                outcome: Outcome = wait_unblock(
                    path,
                    self._watch,
                    self.wake,
                    self.stop,
                    deadline=self._deadline(record),
                    answered=self._answered_check(record),
                )
            finally:
                if phone is not None:
                    phone.active.clear()
            if outcome == "stopped":
                return self._stopped()
            if outcome == "timeout" and record is not None:
                code = self._timed_out(record)
                if code == -1:  # queue: keep waiting, now without a deadline
                    record = self._load(record.request_id) or record
                    continue
                return code
            return self._unblocked(record, removed=(outcome == "gone"))

    def _timed_out(self, record: Request) -> int | None:
        action = str((record.timeout_default or {}).get("action") or "abort")
        minutes = (record.timeout_default or {}).get("after_minutes")
        log.warning(
            "timeout",
            request_id=record.request_id,
            action=action,
            msg=f"no answer after {minutes} min; timeout action: {action}",
        )
        if action == "queue":
            with self.store.locked():
                fresh = self.store.load(record.request_id)
                if fresh.is_open:
                    fresh.extra["timed_out_at"] = clock.iso_seconds()
                    self.store.save(fresh)
            return -1
        resolution = {
            "request_id": record.request_id,
            "chosen_option": None,
            "free_text": None,
            "parsed_decision": action,
            "resolved_at": clock.iso_seconds(),
            "by": "timeout",
            "via": "timeout",
            "action": action,
        }
        fresh, changed = self.store.resolve(record.request_id, resolution, status="expired")
        if not changed:  # a human answered at the last moment: that answer stands
            return self._unblocked(fresh, removed=False)
        self._announce(fresh, now=action == "abort")
        if action == "abort":
            return self._finish("aborted", EXIT_ABORTED, "aborted: timeout action abort")
        self._remove_block(record.request_id)
        if action == "skip":
            self._skip_task()
        return self._resume()

    def _unblocked(self, record: Request | None, *, removed: bool) -> int | None:
        """BLOCKED.md is gone, or the open request was answered."""
        if record is not None:
            record = self._load(record.request_id) or record
            if removed and record.status == "deferred":
                pass  # a deferred review stays open: lifting the block is not an answer
            elif removed:
                resolution = unblocked_by_hand(
                    record.request_id, by="human", via="blocked-file-removed"
                )
                record, _ = self.store.resolve(record.request_id, resolution)
            else:
                self._remove_block(record.request_id)
            self._announce(
                record,
                now=record.extra.get("raised_by") == "supervisor"
                and (record.resolution or {}).get("chosen_option") == "abort",
            )
            code = self._apply(record)
            if code is not None:
                # The answer is applied: a restart must not find (and apply) it again, and
                # starts the count afresh, as after any human decision.
                self.state.open_request = None
                self.state.failures, self.state.failed_iterations = 0, []
                return self._finish("aborted", code, "aborted by the human's answer")
        log.info("unblocked", msg="unblocked; resuming")
        return self._resume()

    def _apply(self, record: Request) -> int | None:
        """Carry a human's decision to the next agent run; act on the supervisor's choices."""
        if not is_human_decision(record):
            return None
        res = record.resolution or {}
        decision = {
            k: res.get(k)
            for k in (
                "request_id",
                "chosen_option",
                "free_text",
                "parsed_decision",
                "resolved_at",
                "by",
                "via",
            )
        }
        decision["request_id"] = record.request_id
        self.state.pending_decision = decision
        try:
            atomicfile.write_json(self.workspace.state_dir / "last_decision.json", decision)
        except OSError as exc:
            log.warning("decision_unwritable", msg=f"cannot write last_decision.json: {exc}")
        log.info(
            "decision",
            request_id=record.request_id,
            decision=decision["parsed_decision"],
            msg=f"decision: {fold(str(decision['parsed_decision']), 80)}",
        )
        if record.extra.get("raised_by") == "supervisor":
            if res.get("chosen_option") == "abort":
                return EXIT_ABORTED
            if res.get("chosen_option") == "skip":
                self._skip_task()
        return None

    def _skip_task(self) -> None:
        task = self.state.task
        if task and task not in self.state.skipped_tasks:
            self.state.skipped_tasks.append(task)
            log.info("task_skipped", task=task, msg=f"skipping task {task!r}")

    def _remove_block(self, request_id: str) -> None:
        """Remove BLOCKED.md if it is still this request's block."""
        path = self.workspace.blocked
        if blocked.state(path) == "file" and blocked.request_id_of(path) in (request_id, None):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _resume(self) -> int | None:
        self.state.failures, self.state.failed_iterations = 0, []
        self.state.open_request = None
        self.state.status = "running"
        self._save()
        return None
