"""The stuck detector in the loop: what an iteration did, handed to it; its signals, asked.

:class:`~loopkit.supervisor.iteration.Iteration` owns one :class:`StuckWatch` and calls it
at the head of an iteration, :meth:`StuckWatch.begin` (the task's budgets: iterations and
wall time, before anything more is spent), and once the agent and verify ran,
:meth:`StuckWatch.observe` (the workspace's digest, the error, the output, the crash, the
cost) — before the verify failure is counted, so one state save holds both — and
:meth:`StuckWatch.ask` after it. A signal
that fires is asked as the supervisor's own block (:mod:`loopkit.supervisor.stuck_questions`);
when a block was already raised in that iteration (verify failures, say), the signals join
it instead — one question per iteration — and its ending resets them too. The counters live
in ``state.json`` (``stuck``) and are saved with the state.
"""

from __future__ import annotations

from loopkit.escalation import blockfile
from loopkit.log import get_logger
from loopkit.supervisor import stuck, stuck_questions
from loopkit.supervisor.snapshot import Snapshots
from loopkit.supervisor.spend import claude_run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from loopkit.escalation.blockfile import Escalation
    from loopkit.supervisor.parts import Parts
    from loopkit.supervisor.runner import Finished
    from loopkit.workspace.state import State

log = get_logger("loopkit.supervisor")


class StuckWatch:
    def __init__(self, parts: Parts, *, escalate: Callable[[Escalation], None]) -> None:
        self.parts = parts
        self.escalate = escalate
        self._snapshots: Snapshots | None = None

    def _detector(self) -> stuck.Detector:
        counters = stuck.Counters.from_dict(self.parts.state.stuck)
        return stuck.Detector(self.parts.config.stuck, counters)

    def _snapshot(self) -> Snapshots:
        workspace = self.parts.workspace
        blocked = self.parts.config.escalation.blocked_file
        if (
            self._snapshots is None
            or self._snapshots.root != workspace.root
            or (blocked not in self._snapshots.excluded)
        ):
            self._snapshots = Snapshots(workspace.root, excluded=(blocked,))
        return self._snapshots

    def begin(self, task: str | None) -> bool:
        """The task's budgets, before the agent runs; True when that raised a block."""
        detector = self._detector()
        if detector.needs_snapshot and detector.counters.last_state is None:
            detector.counters.last_state = self._snapshot().take().digest
        found = detector.begin(task, self.parts.clock.now())
        self._count(detector, found)
        return self.ask(found, task)

    def observe(
        self, task: str | None, agent: Finished, verify: Finished | None
    ) -> list[stuck.Signal]:
        """Count what the iteration did (in the state, saved with the next save); the signals
        that fired are the pending ones of whatever block this iteration raises."""
        detector = self._detector()
        taken = self._snapshot().take() if detector.needs_snapshot else None
        claude = claude_run(agent.tail)
        seen = stuck.Observation(
            iteration=self.parts.state.iteration,
            task=task,
            after=taken.digest if taken else None,
            head=taken.head if taken else None,
            agent_ending=agent.ending,
            agent_exit=agent.exit_code,
            agent_output=agent.tail,
            verify_exit=None if verify is None else _exit(verify),
            verify_output="" if verify is None else verify.tail,
            cost_usd=claude.cost_usd,
            outage=claude.outage,
        )
        found = detector.observe(seen)
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


def block_ended(state: State) -> list[str]:
    """A block ended (answered, lifted, timed out): reset the signals it carried."""
    counters = stuck.Counters.from_dict(state.stuck)
    if not counters.pending:
        return []
    names = stuck.block_ended(counters)
    state.stuck = counters.to_dict()
    return names


def _exit(result: Finished) -> int:
    """verify's exit as a number: a timeout or a command that never ran is a failure."""
    if result.ending == "exited" and result.exit_code is not None:
        return result.exit_code
    return -1
