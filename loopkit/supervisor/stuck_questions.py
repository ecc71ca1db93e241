"""The question a stuck signal asks (SPEC section 19): which signal fired, and its evidence.

One iteration may cross several thresholds at once (an agent that crashes without changing
anything is also making no progress): they are asked as one block, the most specific signal
as the question and the others named in ``Context``, and an answer resets them all. The
choices are the supervisor's own (:func:`loopkit.supervisor.triggers.choices`).
"""

from __future__ import annotations

from loopkit.escalation.blockfile import Escalation
from loopkit.escalation.rubric import MAX_STEM
from loopkit.message import fold
from loopkit.supervisor import stuck, triggers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# The most specific first: it becomes the question.
ORDER = (
    stuck.COST,
    stuck.CRASH_LOOP,
    stuck.SAME_ERROR,
    stuck.REPEATED_OUTPUT,
    stuck.NO_PROGRESS,
    stuck.TASK_ITERATIONS,
    stuck.TASK_TIMEOUT,
)
_ASK = {
    stuck.COST: "spend more?",
    stuck.TASK_ITERATIONS: "go on with it?",
    stuck.TASK_TIMEOUT: "go on with it?",
}


def ordered(signals: Sequence[stuck.Signal]) -> list[stuck.Signal]:
    return sorted(signals, key=lambda s: ORDER.index(s.trigger))


def escalation(signals: Sequence[stuck.Signal], *, task: str | None, iteration: int) -> Escalation:
    first, *others = ordered(signals)
    ask = _ASK.get(first.trigger, "how do I go on?")
    head = f"Stuck ({first.trigger}): {first.question}"
    # The task's name gets the room the rubric's 120 characters leave (at least 20).
    room = max(20, MAX_STEM - len(head) - len(ask) - len(" on task '': "))
    on = f" on task '{fold(task, room)}'" if task and first.trigger not in (
        stuck.TASK_ITERATIONS, stuck.TASK_TIMEOUT, stuck.COST
    ) else ""  # fmt: skip
    question = f"{head}{on}: {ask}"
    context = [
        f"Signal: {first.trigger} ({_amount(first)})",
        f"Task: {task or '(one task: no task_file)'}",
        *first.context,
        *(f"Also: {s.trigger} — {s.question} ({_amount(s)})" for s in others),
    ]
    summary = {
        "context": fold(f"{first.trigger}: {first.context[0]}", 200),
        "attempted": fold("; ".join(first.attempted[-3:]) or first.question, 200),
    }
    return Escalation(
        question=question,
        context="\n".join(context),
        attempted=[line for s in (first, *others) for line in s.attempted] or [first.question],
        choices=triggers.choices(task),
        trigger=stuck.request_trigger(first.trigger),
        raised_by="supervisor",
        task=task,
        iteration=iteration,
        summary=summary,
    )


def _amount(signal: stuck.Signal) -> str:
    if signal.trigger == stuck.COST:
        return f"${signal.count:.2f} of ${signal.threshold:.2f}"
    if signal.trigger == stuck.TASK_TIMEOUT:
        return f"{signal.count / 60:.0f} of {signal.threshold / 60:.0f} min"
    return f"{signal.count:g} of {signal.threshold:g}"
