"""One iteration of ``loopkit run``: ``required_env`` → ``preflight`` → agent → verify → done.

Failures are counted per task; at ``max_verify_failures`` (or when ``required_env`` is unset,
or a preflight fails three times) the supervisor escalates and the loop turns to waiting
(:class:`~loopkit.supervisor.blocked.BlockedPhase`). The supervisor owns one
:class:`Iteration`; :meth:`Iteration.run` returns a :class:`~loopkit.supervisor.parts.Step`.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time

from loopkit.agentsession import DRIVER, DRIVER_ENV
from loopkit.clock import iso_seconds, parse_iso
from loopkit.config import AGENT_HIDDEN_ENV
from loopkit.datarecord import replace
from loopkit.errors import EXIT_OK, ConfigError, LoopkitError
from loopkit.escalation import adoption, blockfile, evidence
from loopkit.hooks import stopfailure
from loopkit.log import get_logger
from loopkit.message import fold
from loopkit.supervisor import resume, stuck_counters, stuck_questions, triggers
from loopkit.supervisor.agentstreams import stream_for
from loopkit.supervisor.childpath import child_environment
from loopkit.supervisor.claudestream import ClaudeStream, speaks_stream_json
from loopkit.supervisor.dialogs import Dialogs
from loopkit.supervisor.iterlog import IterationLog, prune
from loopkit.supervisor.parts import CONTINUE
from loopkit.supervisor.pause import guidance_for_agent
from loopkit.supervisor.runner import describe
from loopkit.supervisor.stuck_watch import StuckWatch
from loopkit.supervisor.tasks import current_task, read_tasks
from loopkit.supervisor.turnwatch import INTERRUPT_GRACE, LiveRecord
from loopkit.workspace.state import LoopStatus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    from loopkit.agentresult import Result as AgentResult
    from loopkit.config import Command
    from loopkit.escalation.blockfile import Escalation
    from loopkit.escalation.escalator import Result
    from loopkit.supervisor.parts import Parts, Step
    from loopkit.supervisor.runner import Finished
    from loopkit.supervisor.stuck import Signal
    from loopkit.supervisor.tasks import Tasks
    from loopkit.supervisor.turnwatch import TurnWatch

log = get_logger("loopkit.supervisor")

PREFLIGHT_TRIES = 3
PREFLIGHT_TIMEOUT = 60.0
KEEP_LOGS = 500
PROGRESS_EVERY = 0.5  # seconds between saves of the iteration number alone
DEPENDENCY_BACKOFF_MAX = 300.0  # seconds: the longest wait between tries of a down API
# Seconds the agent's processes may run on after it exited: Claude Code starts its
# StopFailure hook and exits without waiting for it; the hook records the failure first.
AGENT_LINGER = 2.0
GO_ON = "loopkit: go on with your task."  # a resumed stream-json session's prompt, when none


class Iteration:
    """One iteration: ``run()`` goes from the task's head to ``done`` (or a block)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self._log_warned = False
        self._iteration_saved = -PROGRESS_EVERY
        self._decisions: list[dict[str, Any]] = []  # this iteration's, consumed at its start
        self._asked: str | None = None  # the block seen while the agent ran, if one was
        self._result: AgentResult | None = None  # the agent's result this turn, if it printed one
        self._printed: str | None = None  # a watched agent's own output this turn
        # The iteration whose end ran `done` and heard no: nothing has run since it did.
        self._done_said_no: int | None = None
        self._runaway: tuple[Signal, str, str | None] | None = None  # stopped in its turn: how
        self._skipped: list[str] = []  # the skipped tasks as last read
        self.stuck = StuckWatch(parts, escalate=self._escalate)  # SPEC section 19
        # The environment children inherit, read once (decoding os.environ is not free).
        self._base_env = {
            k: v
            for k, v in child_environment().items()  # loopkit's own folder last on PATH
            if k
            not in (
                "LOOPKIT_DECISION",
                "LOOPKIT_DECISION_REQUEST",
                "LOOPKIT_DECISION_NOTE",
                "LOOPKIT_GUIDANCE",
            )
        }

    def run(self) -> Step:
        loop = self.parts.config.loop
        state = self.parts.state
        task = None
        none_left: Tasks | None = None
        if loop.task_file:
            skipped = self._skipped_tasks()  # `unskip` may change it
            tasks = read_tasks(self.parts.workspace.root, loop.task_file, loop.task_pattern,
                               skipped)  # fmt: skip
            if tasks.none_left and loop.done is None:  # no agent run on the task of none
                why = _none_left(loop.task_file, tasks)
                return self.parts.finish(LoopStatus.FINISHED, EXIT_OK, why)
            none_left = tasks if tasks.none_left else None
            task = tasks.current
        said_no = self._done_said_no == state.iteration  # at the last iteration's end
        state.iteration += 1
        if none_left is not None and loop.task_file and loop.done is not None and not said_no:
            # No task is left, and `done` decides: asked now, before an agent runs on none
            # (init's `loopkit tasks --done` says yes). One of the user's own that says no
            # lets the loop go on, watched for progress like any (SPEC §25).
            with self._iteration_log() as log_file:
                done = self._run("done", loop.done, log_file, timeout=loop.iteration_timeout)
            if self.parts.stop.is_set():
                return self.parts.stopped()
            if done.ok:
                why = _none_left(loop.task_file, none_left) + "; the done command exited 0"
                return self.parts.finish(LoopStatus.FINISHED, EXIT_OK, why)
        changed = task != state.task or state.status != "running"
        if task != state.task or state.iteration == 1:
            state.task_base = evidence.head(self.parts.workspace.root)  # no git: no subprocess
        if task != state.task:
            state.task, state.failures, state.failed_iterations = task, 0, []
        state.status = LoopStatus.RUNNING
        # A human's decision is consumed before anything runs, durably: a crash at any later
        # point never hands it to a second agent run (at most once, across any crash).
        self._decisions, state.pending_decisions = state.pending_decisions, []
        changed = changed or bool(self._decisions)
        now = self.parts.clock.monotonic()
        if changed or now - self._iteration_saved >= PROGRESS_EVERY:
            self._iteration_saved = now
            # The iteration number alone is progress, not state: saved without fsync and at
            # most every PROGRESS_EVERY s, so a tight loop is not a write loop. A crash may
            # re-run an interrupted iteration under its number; counters are never lost.
            self.parts.save(durable=changed)
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
            return CONTINUE
        if self.stuck.begin(task):  # the task's budgets, before more is spent on it
            return CONTINUE
        with self._iteration_log() as log_file:
            for command in loop.preflight:
                if not self._preflight(command, log_file):
                    return self.parts.stopped() if self.parts.stop.is_set() else CONTINUE
            return self._agent_and_verify(task, log_file)

    @contextlib.contextmanager
    def _iteration_log(self) -> Any:
        folder = self.parts.workspace.state_dir / "logs"
        handle = IterationLog(
            folder,
            self.parts.state.iteration,
            redactor=self.parts.redactor,
            limit=self.parts.config.loop.max_log,
        )
        try:
            yield handle
        finally:
            handle.close()
            if handle.broken and not self._log_warned:
                self._log_warned = True
                log.warning("log_unwritable", msg=f"cannot write iteration logs: {handle.broken}")
            if self.parts.state.iteration % 50 == 0:
                prune(folder, KEEP_LOGS)

    def _run(
        self,
        name: str,
        command: Command,
        log_file: IterationLog,
        keep: resume.OutputTail | None = None,
        **kwargs: Any,
    ) -> Finished:
        env = self._child_env()
        if name in ("agent", "resume"):
            for key in AGENT_HIDDEN_ENV:
                env.pop(key, None)
            env.update(guidance_for_agent(self.parts.workspace))  # notes, once (SPEC §22)
            if kwargs.get("conversation") is not None:
                env[DRIVER_ENV] = DRIVER  # its hooks leave Claude's dialogs to us
        log_file.begin(f"--- {name}: {describe(command)}")
        result = self.parts.runner.run(
            command,
            cwd=str(self.parts.workspace.root),
            env=env,
            log=keep or log_file,
            then=self.ahead_env(),  # another command follows: its process is made meanwhile
            **kwargs,
        )
        self.parts.flush_echo()
        # What a command printed passes the redactor before it reaches any file or message.
        redact = self.parts.redactor.text  # its head too: the stuck detector keeps it
        result = replace(result, tail=redact(result.tail), head=redact(result.head))
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

    def ahead_env(self) -> dict[str, str]:
        """The environment a process is made ahead with (:mod:`~loopkit.supervisor.prepared`):
        every command's, without what only some get — the channels' secrets (never in an
        agent's process, not even unset later) and the human's decision."""
        env = self._common_env()
        for key in AGENT_HIDDEN_ENV:
            env.pop(key, None)
        return env

    def _common_env(self) -> dict[str, str]:
        env = dict(self._base_env)
        env["LOOPKIT_WORKSPACE"] = str(self.parts.workspace.root)
        env["LOOPKIT_ITERATION"] = str(self.parts.state.iteration)
        if self.parts.state.task:
            env["LOOPKIT_TASK"] = self.parts.state.task
        return env

    def _child_env(self) -> dict[str, str]:
        env = self._common_env()
        if self._decisions:  # the latest; last_decision.json lists them all
            decision = self._decisions[-1]
            env["LOOPKIT_DECISION"] = str(decision.get("parsed_decision") or "")
            env["LOOPKIT_DECISION_REQUEST"] = str(decision.get("request_id") or "")
            if decision.get("note"):
                env["LOOPKIT_DECISION_NOTE"] = str(decision["note"])
        return env

    def _preflight(self, command: Command, log_file: IterationLog) -> bool:
        tries: list[str] = []
        wait = self.parts.config.loop.preflight_backoff  # before the 2nd try; doubled for the 3rd
        result: Finished | None = None
        for attempt in range(1, PREFLIGHT_TRIES + 1):
            if attempt > 1:
                tries[-1] += f"; waited {wait:g} s"
                if self.parts.clock.wait(self.parts.stop, wait):
                    return False
                wait *= 2
            result = self._run("preflight", command, log_file, timeout=PREFLIGHT_TIMEOUT)
            if self.parts.stop.is_set():
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
                task=self.parts.state.task,
                iteration=self.parts.state.iteration,
            )
        )
        return False

    @staticmethod
    def _reason(result: Finished) -> str:
        if result.ending == "exited":
            return f"exit {result.exit_code}"
        return result.error or result.ending

    def _agent_and_verify(self, task: str | None, log_file: IterationLog) -> Step:
        loop = self.parts.config.loop
        if loop.agent is None:
            raise ConfigError(
                f"no [loop] agent in {self.parts.workspace.root / 'loopkit.toml'}; set the agent "
                "command (`loopkit init --agent …` writes one)"
            )
        blocked_path = self.parts.workspace.blocked
        self._asked = None
        self._result = None
        self._printed = None
        self._runaway = None
        stopfailure.take(self.parts.workspace.root)  # one left from before is not this turn's
        turn = _TurnMark.now(self.parts.workspace.requests_dir)
        agent = self._agent_turn(loop.agent, log_file)
        standing = self._blocks_stand(turn)
        if self.parts.stop.is_set():
            self.parts.save()
            return self.parts.stopped()
        failure = self._api_failed()
        if failure is not None and blockfile.state(blocked_path) == "absent":
            step = self._api_failure(failure, task)
            if step is not None:
                return step
        elif self.parts.state.dependency_down is not None:
            log.info("dependency_up", msg="the agent's API answers again")
            self.parts.state.dependency_down = None
            self.parts.save()
        if blockfile.state(blocked_path) != "absent":
            log.info("agent_blocked", msg="the agent raised a block; verify skipped")
            request_id = blockfile.request_id_of(blocked_path)
            if request_id is None and blockfile.state(blocked_path) == "file":
                request_id = self._adopt(task)
            request_id = request_id or standing  # something in the way of its file
            self.parts.state.status = LoopStatus.BLOCKED
            self.parts.state.open_request = request_id
            self.parts.save()
            return CONTINUE
        if self._asked is not None:
            # The agent's question came and went during its turn: answered from the phone or
            # the inbox (which remove BLOCKED.md), or lifted by hand. The blocked phase
            # applies that ending, as if the block still stood: the answer is for the next
            # agent run.
            log.info("agent_blocked", msg="the agent's block was answered during its turn; "
                     "verify skipped")  # fmt: skip
            self.parts.state.status = LoopStatus.BLOCKED
            self.parts.state.open_request = self._asked
            self.parts.save()
            return CONTINUE
        if self._runaway is not None:
            self._stopped_runaway(task, *self._runaway)
            return CONTINUE
        verify: Finished | None = None
        agent_failed = agent.ending == "timeout" or agent.could_not_run
        if not agent_failed and loop.verify is not None:
            verify = self._run("verify", loop.verify, log_file, timeout=loop.iteration_timeout)
            if self.parts.stop.is_set():
                return self.parts.stopped()
            self._verdict(verify)
        # Counted before the failure below is, so one state save holds both counts.
        fired = self.stuck.observe(task, agent, verify, ticked=self._ticked(task),
                                   result=self._result, printed=self._printed)  # fmt: skip
        if agent_failed:
            self._count_failure(task, f"agent {self._reason(agent)}", agent.tail)
        elif verify is None or verify.ok:
            self._passed()
        else:
            self._count_failure(task, f"verify {self._reason(verify)}", verify.tail)
        self.stuck.ask(fired, task)
        if blockfile.state(blocked_path) != "absent":
            return CONTINUE  # escalated: the loop turns to the blocked phase
        if loop.done is not None:
            done = self._run("done", loop.done, log_file, timeout=loop.iteration_timeout)
            if self.parts.stop.is_set():
                return self.parts.stopped()
            if done.ok:
                return self.parts.finish(
                    LoopStatus.FINISHED, EXIT_OK, "done: the done command exited 0"
                )
            self._done_said_no = self.parts.state.iteration  # the next head need not ask again
        return CONTINUE

    def _agent_turn(self, agent: Command, log_file: IterationLog) -> Finished:
        """The agent's turn: its own session resumed after an answer (``[loop] resume``,
        :mod:`~loopkit.supervisor.resume`), else — or when the session does not resume — a
        fresh ``agent`` run. Its result, when it prints one, is recorded in the state."""
        state = self.parts.state
        plan = resume.plan(
            self.parts.config.loop.resume,
            self._decisions,
            self.parts.store,
            state.agent_session,
            self.parts.workspace.state_dir,
        )
        if plan is not None:
            said = "with the decision on stdin" if plan.prompt else "(the hook answers)"
            log.info("resume", session=plan.session_id,
                     msg=f"resuming the agent's session {plan.session_id} {said}")  # fmt: skip
            finished, result = self._agent_run(
                "resume", plan.command, log_file, prompt=plan.prompt or GO_ON
            )
            why = resume.not_resumed(finished, result, plan.session_id)
            state.resume = {
                "session_id": plan.session_id,
                "iteration": state.iteration,
                "resumed": why is None,
                "reason": why,
            }
            api_failed = stopfailure.path_in(self.parts.workspace.root).exists() or (
                result is not None and result.failure() is not None
            )
            if why is None or api_failed or self.parts.stop.is_set():
                # The API failed, not the session: no fresh run; it is resumed again later.
                self.parts.save()
                return finished
            log.warning(
                "resume_failed",
                session=plan.session_id,
                msg=f"session {plan.session_id} did not resume ({why}): a fresh agent run "
                "with LOOPKIT_DECISION instead",
            )
            self.parts.save()
        return self._agent_run("agent", agent, log_file, prompt=self.parts.config.loop.prompt)[0]

    def _agent_run(
        self, name: str, command: Command, log_file: IterationLog, *, prompt: str | None = None
    ) -> tuple[Finished, AgentResult | None]:
        """Run the agent once. An agent that reads stream-json is spoken with
        (:class:`~loopkit.supervisor.claudestream.ClaudeStream`: ``prompt`` is its turn's
        message, its dialogs are asked); any other has its output read for a result."""
        loop = self.parts.config.loop
        watch = self.parts.watch
        keep = resume.OutputTail(log_file)
        stream = self._watch(name, command, prompt)
        if stream is None:  # a message for the turn becomes a note (said so) meanwhile
            self.parts.mailbox.turn_started("the agent (its output is no event stream)",
                                            takes=False)  # fmt: skip
        finished = self._run(
            name,
            command,
            log_file,
            keep=keep,
            timeout=loop.iteration_timeout,
            interrupt=self._block_watch(),
            interrupt_grace=loop.block_grace,
            recheck=watch.timeout_hint if watch else None,
            conversation=stream,
            linger=AGENT_LINGER,
        )
        if stream is None:
            self.parts.mailbox.turn_ended()
        result = stream.result if isinstance(stream, ClaudeStream) else keep.result()
        self._result = result
        self._printed = stream.printed if stream is not None else None
        state = self.parts.state
        if stream is not None:
            state.agent_session = stream.session_id or state.agent_session
            if stream.runaway is not None:
                self._runaway = (stream.runaway, stream.stopped_by or "?", stream.session_id)
        if result is not None:
            state.agent_result = {**result.to_dict(), "iteration": state.iteration}
            state.agent_session = result.session_id or state.agent_session
        if result is not None or stream is not None:
            self.parts.save()
        return finished, result

    def _watch(self, name: str, command: Command, prompt: str | None) -> TurnWatch | None:
        """The watch of the agent's run when it streams events (SPEC section 24): an agent
        that reads stream-json is spoken with (``prompt`` is its turn's message, its dialogs
        are asked); one that prints events is watched; any other has its output read for a
        result, as before."""
        parts = self.parts
        dialogs = None
        if speaks_stream_json(command):
            if not prompt:
                raise ConfigError(
                    f"[loop] {name} reads its prompt on stdin (--input-format stream-json): "
                    f"set [loop] prompt in {parts.workspace.root / 'loopkit.toml'}"
                )
            dialogs = Dialogs(parts.escalator, str(parts.workspace.root))
        stream = stream_for(
            command,
            prompt=prompt,
            dialogs=dialogs,
            settings=parts.config.stuck,
            now=parts.clock.monotonic,
            mailbox=parts.mailbox,
            redact=parts.redactor.text,
            iteration=parts.state.iteration,
            grace=min(INTERRUPT_GRACE, parts.config.loop.kill_grace),
        )
        if stream is not None:
            base = {"pid": os.getpid(), "iteration": parts.state.iteration,
                    "agent": stream.agent, "command": name}  # fmt: skip
            stream.live = LiveRecord(parts.workspace, base, parts.clock.monotonic)
        return stream

    def _stopped_runaway(self, task: str | None, signal: Signal, how: str,
                         session: str | None) -> None:  # fmt: skip
        """The agent's turn was stopped inside (same_call, ping_pong, silent): ask, with the
        evidence; the answer resumes the same session (:func:`resume.plan`)."""
        if session and self.parts.config.loop.resume is not None:
            kept = f"the session {session} is kept: your answer resumes it"
        elif session:
            kept = (f"its session was {session}; with no [loop] resume your answer goes to a "
                    "fresh run (LOOPKIT_DECISION)")  # fmt: skip
        else:
            kept = "no session was named: your answer goes to a fresh run"
        # Right below the call itself: BLOCKED.md shows the first lines of the evidence.
        stopped = f"Stopped with {how}; {kept}"
        told = replace(signal, context=[*signal.context[:1], stopped, *signal.context[1:]])
        iteration = self.parts.state.iteration
        self._escalate(stuck_questions.escalation([told], task=task, iteration=iteration))

    def _api_failed(self) -> dict[str, Any] | None:
        """The API failure the agent's turn ended on: read from its own result (the HTTP
        status, certain), else from what its StopFailure hook recorded; None: none."""
        hooked = stopfailure.take(self.parts.workspace.root)
        found = self._result.failure() if self._result is not None else None
        if found is None or self._result is None:
            return hooked
        status = self._result.api_error_status
        if hooked is not None:  # its error type names it; the status says it for sure
            return {**hooked, "error_details": f"HTTP {status}" if status else None,
                    "status": status}  # fmt: skip
        return {"error": found[1], "error_details": None, "status": status}

    def _api_failure(self, failure: dict[str, Any], task: str | None) -> Step | None:
        """Claude Code's turn ended on an API error (its StopFailure hook said which): a rate
        limit or an overload is a dependency down — wait with backoff, not a failure, and
        ask once it has lasted ``[loop] dependency_wait``; a failed login or billing is a
        missing credential, asked at once. None: any other error (counted as usual)."""
        kind = stopfailure.kind(failure)
        state = self.parts.state
        what = stopfailure.describe(failure)
        if kind == "credential":
            log.error("agent_credential", msg=f"the agent's API refused it: {what}")
            self._escalate(
                triggers.agent_credential(error=what, task=task, iteration=state.iteration)
            )
            return CONTINUE
        if kind != "dependency":
            return None
        loop = self.parts.config.loop
        now = self.parts.clock.now()
        down = state.dependency_down or {"since": iso_seconds(now), "tries": 0}
        down = {**down, "error": what, "tries": int(down.get("tries", 0)) + 1}
        # Handed to no agent: the API failed first. The next run gets the decisions again.
        state.pending_decisions = [*self._decisions, *state.pending_decisions]
        self._decisions = []
        try:
            lasted = (now - parse_iso(str(down["since"]))).total_seconds()
        except ValueError:
            lasted = 0.0
        if lasted >= loop.dependency_wait:
            state.dependency_down = None
            self._escalate(
                triggers.agent_api_down(
                    error=what, since=str(down["since"]), tries=down["tries"],
                    task=task, iteration=state.iteration,
                )
            )  # fmt: skip
            return CONTINUE
        wait = min(
            loop.preflight_backoff * 2 ** min(down["tries"] - 1, 20),
            DEPENDENCY_BACKOFF_MAX,
            max(0.0, loop.dependency_wait - lasted),
        )
        state.dependency_down = {**down, "next_try_in": wait}
        self.parts.save()
        log.warning(
            "dependency_down",
            error=failure.get("error"),
            msg=f"the agent's API is down ({what}): not a failure; trying again in {wait:g} s "
            f"(try {down['tries']}; asking after {loop.dependency_wait:g} s down)",
        )
        if self.parts.clock.wait(self.parts.stop, wait):
            return self.parts.stopped()
        return CONTINUE

    def _blocks_stand(self, turn: _TurnMark) -> str | None:
        """Only a human lifts a block (SPEC section 28). A block that stood during the
        agent's turn and whose file was removed or moved while the agent ran (``loopkit
        escalate …; rm -f BLOCKED.md``) is not lifted: its request stays open and its
        ``BLOCKED.md`` is written again (something other than a file in its place: the
        request is the block; another block there: it joins that one). An answer — from the
        phone, the inbox, ``reply``/``unblock`` — closes the request, and then nothing
        stands. Returns the request that stands, if one does."""
        store, path = self.parts.store, self.parts.workspace.blocked
        found = [self._asked] if self._asked else []
        if turn.changed(self.parts.workspace.requests_dir):
            found += store.changed_since(turn.ns - TURN_SLACK_NS)
        standing: str | None = None
        for request_id in dict.fromkeys(found):
            try:
                record = store.load(request_id)
            except LoopkitError:
                continue
            if not record.is_open or not record.has_own_block:
                continue
            if blockfile.is_block_of(path, record):
                standing = standing or request_id
                continue
            where = blockfile.state(path)
            if where == "other":
                standing = standing or request_id
                continue
            try:
                placed = self.parts.escalator.place(record, persisted=True, own=True)
            except LoopkitError as exc:
                log.error("block_not_restored", msg=f"cannot write {path.name} again: {exc}")
                standing = standing or request_id
                continue
            log.warning(
                "block_stands",
                request_id=request_id,
                msg=f"{path.name} of request {request_id} went while the agent ran: only a "
                "human lifts a block — it stands"
                + (f" (joined to {placed.joined})" if placed.joined else ", written again"),
            )
            standing = standing or placed.joined or request_id
        return standing

    def _block_watch(self) -> Callable[[], bool]:
        """What the runner looks at while the agent runs (at every change in the workspace,
        and every ``recheck`` s): a block that appears is sent at once — the agent's process
        has no channel secrets, so its ``escalate`` left the send to us (SPEC section 16) —
        and, with ``stop_agent_on_block``, it ends the agent's turn after ``block_grace``.
        The runner looks often (at every chunk of output too): one ``stat`` unless BLOCKED.md
        is new."""
        path = self.parts.workspace.blocked
        stops = self.parts.config.loop.stop_agent_on_block
        seen: list[tuple[int, int]] = []

        def blocked() -> bool:
            try:
                info = os.lstat(path)  # a link at BLOCKED.md is in the way, never followed
            except OSError:
                return False
            if not stat.S_ISREG(info.st_mode):
                return False
            if [(info.st_ino, info.st_mtime_ns)] != seen:
                seen[:] = [(info.st_ino, info.st_mtime_ns)]
                self._send_left()
            return stops

        return blocked

    def _send_left(self) -> None:
        """Send the standing block's message if the agent raised it and left it unsent."""
        request_id = blockfile.request_id_of(self.parts.workspace.blocked)
        if request_id is None:
            return  # written by hand: adopted (and sent) when the agent's turn ends
        self._asked = request_id
        try:
            record = self.parts.store.load(request_id)
            self.parts.escalator.send_left(record)
        except LoopkitError as exc:
            # Gone or broken meanwhile (an agent may delete requests/ as it goes): the
            # blocked phase raises it again from BLOCKED.md when the agent's turn ends.
            log.warning("send_left_failed", msg=f"cannot send the agent's question yet: {exc}")

    def _skipped_tasks(self) -> list[str]:
        """The skipped tasks, read anew each iteration; a file that cannot be read (an agent
        can write anything in the workspace) keeps those read last and is reported, never a
        stop."""
        try:
            self._skipped = self.parts.skipped.tasks()
        except LoopkitError as exc:
            log.warning("skipped_unreadable", msg=f"{exc}; the tasks skipped before stay so")
        return self._skipped

    def _verdict(self, verify: Finished) -> None:
        """The last verify, for `loopkit ps`: saved now when its outcome changed (a tight loop
        with the same outcome each time adds no write; the next save carries the time)."""
        before = self.parts.state.last_verify or {}
        verdict = _verdict(verify)
        self.parts.state.last_verify = verdict
        if (before.get("ok"), before.get("line")) != (verdict["ok"], verdict["line"]):
            self.parts.save(durable=False)

    def _passed(self) -> None:
        if self.parts.state.failures:
            log.info("verify_passed", msg="verify passed; failure count reset")
            self.parts.state.failures, self.parts.state.failed_iterations = 0, []
            self.parts.save()

    def _ticked(self, task: str | None) -> bool:
        """Whether the task this iteration ran on is no longer the current one: ticked off
        (or its line gone) during it."""
        loop = self.parts.config.loop
        if not loop.task_file or task is None:
            return False
        now = current_task(self.parts.workspace.root, loop.task_file, loop.task_pattern,
                           self._skipped)  # fmt: skip
        return now != task

    def _count_failure(self, task: str | None, reason: str, output: str) -> None:
        """A failing iteration, counted towards ``max_verify_failures`` only when it broke
        no new ground (SPEC §25): one that reached new files or lines, or failed a way not
        seen before in the task, starts the count again — a test stays red while the layers
        beneath it land, and 20 → 15 → 9 failing tests is progress."""
        state = self.parts.state
        if self.stuck.broke_new_ground:
            if state.failures:
                log.info("failure_new_ground", task=task,
                         msg=f"{reason}, but the iteration broke new ground: not counted "
                         f"(0/{self.parts.config.loop.max_verify_failures})")  # fmt: skip
            else:
                log.info("failure_new_ground", task=task,
                         msg=f"{reason}; the iteration broke new ground: not counted")  # fmt: skip
            state.failures, state.failed_iterations = 0, []
            self.parts.save()
            return
        state.failures += 1
        sig = triggers.what_failed(output)[-1] if output.strip() else ""
        state.failed_iterations.append(
            {"iteration": state.iteration, "reason": reason, "signature": sig}
        )
        limit = self.parts.config.loop.max_verify_failures
        state.failed_iterations = state.failed_iterations[-limit:]
        log.warning(
            "failure",
            task=task,
            failures=state.failures,
            msg=f"{reason} ({state.failures}/{limit}{' on ' + repr(task) if task else ''})",
        )
        self.parts.save()
        if state.failures >= limit:
            loop = self.parts.config.loop
            agents_fault = reason.startswith("agent") or loop.verify is None
            command = (loop.agent if agents_fault else loop.verify) or ""
            # The signal that counts the same failures is answered with this block.
            self.stuck.carry(
                stuck_counters.CRASH_LOOP if agents_fault else stuck_counters.SAME_ERROR
            )
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

    def _adopt(self, task: str | None) -> str:
        """The agent wrote BLOCKED.md by hand (seed 001): raise it as a request, as it is."""
        state = self.parts.state
        written = adoption.read(self.parts.workspace.blocked)
        escalation = triggers.adopted(written, task=task, iteration=state.iteration)
        result = self.parts.escalator.adopt(escalation)
        self._announce(result)
        return result.request.request_id

    def _escalate(self, escalation: Escalation) -> None:
        try:
            result = self.parts.escalator.escalate(escalation)
        except LoopkitError as exc:
            # The block could not be raised (e.g. BLOCKED.md is a folder): never guess on.
            log.error("escalation_failed", error=str(exc), msg=f"cannot block: {exc}")
            raise
        self.parts.state.open_request = result.joined or result.request.request_id
        self.parts.state.status = LoopStatus.BLOCKED
        self.parts.save()
        if not result.joined:
            self._announce(result)

    def _announce(self, result: Result) -> None:
        """The question on the console, with where it went."""
        outcome = result.request.delivery[-1] if result.request.delivery else None
        if outcome is None:
            sent = "channel none: BLOCKED.md is the escalation"
        elif outcome.ok:
            sent = f"sent via {outcome.channel}"
        else:
            sent = f"{outcome.channel}: not sent"
        text = result.request.message(self.parts.workspace.repo_name()).text
        lines = "\n".join(f"    {line}" for line in text.splitlines())
        log.info(
            "message",
            request_id=result.request.request_id,
            msg=f"the question ({sent}):\n{lines}",
        )


TURN_SLACK_NS = 2_000_000_000  # coarse mtimes: records written up to 2 s before the turn too


class _TurnMark:
    """When an agent's turn began, and how its ``requests/`` folder looked then: a turn that
    wrote no record is known by one ``stat``, no record read."""

    __slots__ = ("folder", "ns")

    def __init__(self, ns: int, folder: tuple[int, int, int] | None) -> None:
        self.ns = ns
        self.folder = folder

    @classmethod
    def now(cls, requests_dir: Path) -> _TurnMark:
        return cls(time.time_ns(), _folder_stamp(requests_dir))

    def changed(self, requests_dir: Path) -> bool:
        return _folder_stamp(requests_dir) != self.folder or self.folder is None


def _folder_stamp(folder: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_ino, info.st_size


def _verdict(result: Finished) -> dict[str, Any]:
    """The last verify as ``loopkit ps`` shows it: pass or fail, and its first line."""
    first = next((line.strip() for line in result.tail.splitlines() if line.strip()), "")
    return {"ok": result.ok, "line": fold(first, 120), "at": iso_seconds()}


def _none_left(task_file: str, tasks: Tasks) -> str:
    skipped = len(tasks.skipped)
    besides = f" ({skipped} skipped: `loopkit unskip TASK` takes one back)" if skipped else ""
    return f"done: no task left in {task_file}{besides}"
