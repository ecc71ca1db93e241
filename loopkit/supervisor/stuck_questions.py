"""The question a stuck signal asks (SPEC §19, §25): which signal fired, and its evidence.

One iteration may cross several thresholds at once (an agent that crashes without changing
anything is also making no progress): they are asked as one block, the most specific signal
as the question and the others named in ``Context``, and an answer resets them all. The
choices are the supervisor's own (:func:`loopkit.supervisor.triggers.choices`).

The question says what the iterations were lost to (``Signal.label``): the agent's API
down (*dependency down*, "keep waiting?"), a call of the agent's refused (*denied*, with the
call), and otherwise the signal with its one telling fact — the failing test and its first
error line, a crash's exit and last line. It fits the phone's
120 characters by cutting the task's name, then that fact — never the ask.
"""

from __future__ import annotations

from loopkit.escalation.blockfile import Escalation
from loopkit.message import MAX_QUESTION, ask, fold
from loopkit.supervisor import stuck_counters, triggers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from loopkit.supervisor import stuck

# The most specific first: it becomes the question.
ORDER = (
    stuck_counters.SAME_CALL,
    stuck_counters.PING_PONG,
    stuck_counters.SILENT,
    stuck_counters.COST,
    stuck_counters.CRASH_LOOP,
    stuck_counters.SAME_ERROR,
    stuck_counters.REPEATED_OUTPUT,
    stuck_counters.NO_PROGRESS,
    stuck_counters.TASK_ITERATIONS,
    stuck_counters.TASK_TIMEOUT,
)
_ASK = {
    stuck_counters.COST: "spend more?",
    stuck_counters.TASK_ITERATIONS: "go on with it?",
    stuck_counters.TASK_TIMEOUT: "go on with it?",
}
_BUDGETS = (stuck_counters.TASK_ITERATIONS, stuck_counters.TASK_TIMEOUT, stuck_counters.COST)
MIN_TASK = 20  # characters of the task's name the question keeps before its fact is cut


def ordered(signals: Sequence[stuck.Signal]) -> list[stuck.Signal]:
    return sorted(signals, key=lambda s: ORDER.index(s.trigger))


def escalation(signals: Sequence[stuck.Signal], *, task: str | None, iteration: int) -> Escalation:
    first, *others = ordered(signals)
    question, trigger = _question(first, task)
    context = [
        f"Signal: {first.trigger} ({_amount(first)})"
        + (f", the iterations lost to: {first.label}" if first.label else ""),
        f"Task: {task or '(one task: no task_file)'}",
        *first.context,
        *(f"Also: {s.trigger} — {s.question} ({_amount(s)})" for s in others),
    ]
    shown = first.label or first.trigger
    summary = {
        "context": fold(f"{shown}: {first.detail or first.context[0]}", 200),
        "attempted": fold("; ".join(first.attempted[-3:]) or first.question, 200),
    }
    return Escalation(
        question=question,
        context="\n".join(context),
        attempted=[line for s in (first, *others) for line in s.attempted] or [first.question],
        choices=triggers.choices(task),
        trigger=trigger,
        raised_by="supervisor",
        task=task,
        iteration=iteration,
        summary=summary,
    )


def _question(first: stuck.Signal, task: str | None) -> tuple[str, str]:
    """The question's stem and the request's trigger."""
    if first.label == stuck_counters.DEPENDENCY_DOWN:
        head, said = "Stuck (dependency down)", f"the agent's API failed {first.count:g}× in a row"
        return _fit(head, said, first.detail, task, "keep waiting?"), "dependency-down"
    if first.label == stuck_counters.DENIED:
        head, said = "Stuck (denied)", f"refused {first.count:g}× in a row"
        return _fit(head, said, first.detail, task, "how do I go on?"), "stuck-denied"
    on = task if first.trigger not in _BUDGETS else None
    head = f"Stuck ({first.trigger})"
    said = first.question
    if first.trigger == stuck_counters.SAME_ERROR:
        said = f"{first.count:g}× in a row"
    elif first.trigger == stuck_counters.CRASH_LOOP:
        said = f"the agent crashed {first.count:g}× in a row"
    question = _fit(head, said, first.detail, on, _ASK.get(first.trigger, "how do I go on?"))
    return question, stuck_counters.request_trigger(first.trigger)


def _fit(head: str, said: str, detail: str, task: str | None, question: str) -> str:
    """``head: said on task 'x' — detail: question`` in the phone's characters: the task's
    name cut first (to :data:`MIN_TASK`), then the detail; the ask always whole
    (:func:`loopkit.message.ask`)."""
    room = MAX_QUESTION - len(f"{head}: {said}") - len(question) - 2
    task_len = len(task) if task else 0
    detail_len = len(detail)
    excess = task_len + (11 if task else 0) + detail_len + (3 if detail else 0) - room
    for floor, which in ((MIN_TASK, "task"), (0, "detail")):
        if excess <= 0:
            break
        if which == "detail":
            cut = min(excess, max(0, detail_len - floor))
            detail_len -= cut
        else:
            cut = min(excess, max(0, task_len - floor))
            task_len -= cut
        excess -= cut
    on = f" on task '{fold(task, task_len)}'" if task else ""
    fact = f" — {fold(detail, detail_len)}" if detail and detail_len >= 8 else ""
    return ask(f"{head}: {said}{on}{fact}", question)


def _amount(signal: stuck.Signal) -> str:
    if signal.trigger == stuck_counters.COST:
        return f"${signal.count:.2f} of ${signal.threshold:.2f}"
    if signal.trigger == stuck_counters.TASK_TIMEOUT:
        return f"{signal.count / 60:.0f} of {signal.threshold / 60:.0f} min"
    if signal.trigger == stuck_counters.SILENT:
        return f"{stuck_counters.span(signal.count)} of {stuck_counters.span(signal.threshold)}"
    return f"{signal.count:g} of {signal.threshold:g}"
