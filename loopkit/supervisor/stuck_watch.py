"""The stuck detector in the loop: what an iteration did, handed to it; its signals, asked.

:class:`~loopkit.supervisor.iteration.Iteration` owns one :class:`StuckWatch` and calls it
at the head of an iteration, :meth:`StuckWatch.begin` (the task's budgets: iterations and
wall time, before anything more is spent; where a new task's ground begins), and once the
agent and verify ran, :meth:`StuckWatch.observe` (how far the task's change reaches, the
task ticked or not, the error, the output, the crash, the agent's usage) — before the verify
failure is counted, so one state save holds both, and so that a failure in an iteration that
broke new ground is not counted against ``max_verify_failures`` (``broke_new_ground``) — and
:meth:`StuckWatch.ask` after it. The spend is recorded in the state (``spend_usd``), where
``loopkit ps``, the Loops page and Telegram's ``/loops`` read it. A signal that fires is
asked as the supervisor's own block (:mod:`loopkit.supervisor.stuck_questions`); when a
block was already raised in that iteration (verify failures, say), the signals join it
instead — one question per iteration — and its ending resets them too. The counters live
in ``state.json`` (``stuck``) and are saved with the state.
"""

from __future__ import annotations

from loopkit.escalation import blockfile
from loopkit.log import get_logger
from loopkit.supervisor import stuck, stuck_counters, stuck_questions
from loopkit.supervisor.reach import Reach
from loopkit.supervisor.spend import AgentRun, agent_run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from loopkit.agentresult import Result as AgentResult
    from loopkit.escalation.blockfile import Escalation
    from loopkit.supervisor.parts import Parts
    from loopkit.supervisor.runner import Finished
    from loopkit.workspace.state import State

log = get_logger("loopkit.supervisor")


class StuckWatch:
    def __init__(self, parts: Parts, *, escalate: Callable[[Escalation], None]) -> None:
        self.parts = parts
        self.escalate = escalate
        self._reach: Reach | None = None
        self._reach_task: tuple[str | None] | None = None  # the task its ground began with
        self.broke_new_ground = False  # whether the last observed iteration did

    def _detector(self) -> stuck.Detector:
        counters = stuck_counters.Counters.from_dict(self.parts.state.stuck)
        return stuck.Detector(self.parts.config.stuck, counters)

    def _reach_of(self) -> Reach:
        workspace = self.parts.workspace
        blocked = self.parts.config.escalation.blocked_file
        if (
            self._reach is None
            or self._reach.root != workspace.root
            or (blocked not in self._reach.excluded)
        ):
            self._reach, self._reach_task = Reach(workspace.root, excluded=(blocked,)), None
        return self._reach

    def begin(self, task: str | None) -> bool:
        """The task's budgets, before the agent runs; True when that raised a block. A new
        task (or a new supervisor) starts the task's ground where the workspace is now."""
        reach = self._reach_of()
        if self._reach_task != (task,):
            reach.start(self.parts.state.task_base)
            self._reach_task = (task,)
        detector = self._detector()
        found = detector.begin(task, self.parts.clock.now())
        self._count(detector, found)
        return self.ask(found, task)

    def observe(
        self,
        task: str | None,
        agent: Finished,
        verify: Finished | None,
        *,
        ticked: bool = False,
        result: AgentResult | None = None,
        printed: str | None = None,
    ) -> list[stuck.Signal]:
        """Count what the iteration did (in the state, saved with the next save); the signals
        that fired are the pending ones of whatever block this iteration raises. ``ticked``:
        the task it ran on is no longer the current one (ticked off, or gone); ``result``:
        Claude's result when the agent was spoken with (its output then is not the tail);
        ``printed``: a watched agent's own output (its events)."""
        detector = self._detector()
        reach = self._reach_of()
        if self._reach_task != (task,):  # observed without a begin (a test's iteration)
            reach.start(self.parts.state.task_base)
            self._reach_task = (task,)
        ground = reach.take()
        exited = agent.exit_code if agent.ending == "exited" else None
        # A watched agent's tail is the lines shown for its events: its usage is read from
        # what it printed itself (``printed``), as for an agent not watched.
        output = printed if printed is not None else agent.tail
        usage = with_result(agent_run(output, exit_code=exited), result)
        seen = stuck.Observation(
            iteration=self.parts.state.iteration,
            task=task,
            reached=ground.new,
            reached_note=ground.note,
            head=ground.head,
            ticked=ticked,
            agent_ending=agent.ending,
            agent_exit=agent.exit_code,
            agent_output=agent.tail,
            agent_head=agent.head,
            verify_exit=None if verify is None else _exit(verify),
            verify_output="" if verify is None else verify.tail,
            cost_usd=usage.cost_usd,
            outage=usage.outage,
            denied=usage.denied,
        )
        found = detector.observe(seen)
        self.broke_new_ground = detector.broke_new_ground
        if usage.cost_usd is not None or self.parts.state.spend_usd is not None:
            self.parts.state.spend_usd = round(detector.counters.spent_usd, 6)
        self._count(detector, found)
        return found

    def ask(self, found: Sequence[stuck.Signal], task: str | None) -> bool:
        """Ask about the signals :meth:`observe` found — unless a block was raised in this
        iteration (or stands): that block carries them, and its end resets them. By the
        state, not the file alone: a human may have lifted that block already."""
        if not found:
            return False
        state = self.parts.state
        if state.open_request or blockfile.state(self.parts.workspace.blocked) != "absent":
            self.parts.save()
            return True
        self.escalate(stuck_questions.escalation(found, task=task, iteration=state.iteration))
        return True

    def carry(self, name: str) -> None:
        """The block about to be raised answers signal ``name`` too (verify failing again
        and again is also the same error): its end resets that signal's count."""
        counters = stuck_counters.Counters.from_dict(self.parts.state.stuck)
        counters.pending = list(dict.fromkeys([*counters.pending, name]))
        self.parts.state.stuck = counters.to_dict()

    def _count(self, detector: stuck.Detector, found: Sequence[stuck.Signal]) -> None:
        for signal in found:
            log.warning(
                "stuck",
                trigger=signal.trigger,
                count=signal.count,
                threshold=signal.threshold,
                msg=f"stuck: {signal.question} ({signal.trigger})",
            )
        names = [s.trigger for s in found]
        detector.counters.pending = list(dict.fromkeys([*detector.counters.pending, *names]))
        self.parts.state.stuck = detector.counters.to_dict()


def with_result(usage: AgentRun, result: AgentResult | None) -> AgentRun:
    """What the agent's output said, completed by Claude's result read from its stream: its
    cost, the API failure it names (a dependency down), the tool it refused."""
    if result is None:
        return usage
    failure = result.failure()
    down = failure[1] or "API error" if failure and failure[0] == "dependency" else ""
    outage = usage.outage or down
    denied = usage.denied or next((f"{d.tool_name}(…)" for d in result.permission_denials), "")
    cost = usage.cost_usd if usage.cost_usd is not None else result.total_cost_usd
    return AgentRun(cost, outage, denied)


def block_ended(state: State) -> list[str]:
    """A block ended (answered, lifted, timed out): reset the signals it carried."""
    counters = stuck_counters.Counters.from_dict(state.stuck)
    if not counters.pending:
        return []
    names = stuck_counters.block_ended(counters)
    state.stuck = counters.to_dict()
    return names


def _exit(result: Finished) -> int:
    """verify's exit as a number: a timeout or a command that never ran is a failure."""
    if result.ending == "exited" and result.exit_code is not None:
        return result.exit_code
    return -1
