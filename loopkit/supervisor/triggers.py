"""The questions the supervisor asks itself (SPEC section 3, triggers 1–3).

Each block the supervisor raises offers, in this order: A) Retry with a hint, B) Skip the
task (only when there is a task), C) Abort the loop — whatever letters they get, their values
are ``retry``, ``skip`` and ``abort``, and their aliases (``stop``, ``next``, ``again``, …) are
read as them (SPEC section 16). Context is an error signature — the failing test and its first
error line (:mod:`loopkit.supervisor.failure`), never the runner's summary, never a wall of
log; the full output is in ``.loopkit/logs/``. A question fits the phone by cutting its
context, never its ask (:func:`loopkit.message.ask`, SPEC §25).
"""

from __future__ import annotations

import re

from loopkit.datarecord import replace
from loopkit.escalation.blockfile import Choice, Escalation
from loopkit.message import ask, fold
from loopkit.supervisor.failure import NO_OUTPUT
from loopkit.supervisor.failure import read as read_failure

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

CHOICES = (
    Choice(
        "Retry with a hint",
        "the next agent run gets your reply as LOOPKIT_DECISION",
        "retry",
        ("again", "try again"),
    ),
    Choice("Skip the task", "loopkit moves on to the next task", "skip", ("next", "pass")),
    Choice(
        "Abort the loop",
        "loopkit run stops (exit 3)",
        "abort",
        ("stop", "quit", "cancel", "halt"),
    ),
)


def choices(task: str | None) -> list[Choice]:
    """The supervisor's own choices: *Skip the task* only when there is a task to skip."""
    return [c for c in CHOICES if task or c.value != "skip"]


_ERRORISH = re.compile(
    r"error|fail|exception|traceback|assert|panic|fatal|denied|refused|not found|timed? ?out",
    re.IGNORECASE,
)


def signature(output: str, lines: int = 3) -> list[str]:
    """The lines of ``output`` that best say what went wrong (at most ``lines``)."""
    tail = [line.strip() for line in output.splitlines()[-60:] if line.strip()]
    errorish = [line for line in tail if _ERRORISH.search(line)]
    chosen = (errorish or tail)[-lines:]
    return [fold(line, 200) for line in chosen]


def _task_name(task: str | None, limit: int = 80) -> str:
    return f"task '{fold(task, limit)}'" if task else "the current task"


def _in_a_row(count: int) -> str:
    return "once" if count == 1 else f"{count} times in a row"


def what_failed(output: str, exit_code: int = 1) -> list[str]:
    """The failing test and its first error line (or the first error line alone): what a
    human needs of a failed command's output, never its summary line."""
    failure = read_failure(output, exit_code)
    if not failure.test:
        return [failure.line]
    return [fold(failure.test, 200), *([failure.said] if failure.said else [])]


def verify_failures(
    *,
    task: str | None,
    failures: int,
    command: str,
    last_output: str,
    failed: Sequence[dict[str, Any]],
    iteration: int,
) -> Escalation:
    sig = what_failed(last_output)
    reasons = sorted({str(f["reason"]) for f in failed})
    # Who failed: the agent (it could not run, or timed out) or verify — or both by turns.
    if reasons and all(r.startswith("agent") for r in reasons):
        who = "The agent"
    elif reasons and all(r.startswith("verify") for r in reasons):
        who = "Verify"
    else:
        who = "The iteration"
    context = "\n".join(
        [
            f"Task: {task or '(one task: no task_file)'}",
            f"{who}: `{fold(command, 100)}` failed {_in_a_row(failures)}",
            *(f"> {line}" for line in sig),
        ]
    )
    attempted = [
        f"iteration {f['iteration']}: {f['reason']}"
        + (f" — {f['signature']}" if f.get("signature") else "")
        for f in failed
    ]
    numbers = ", ".join(str(f["iteration"]) for f in failed)
    failure = read_failure(last_output)
    said = failure.brief or failure.line  # the failing test: its first error line
    summary = {
        "context": fold(f"{_task_name(task)}: {': '.join(sig)}", 280),
        "attempted": f"iteration{'s' if len(failed) > 1 else ''} {numbers}: {'; '.join(reasons)}",
    }
    head = f"{who} failed {_in_a_row(failures)} on {_task_name(task, 40)}"
    return Escalation(
        question=ask(f"{head} — {said}" if failure.line != NO_OUTPUT else head, "how do I go on?"),
        context=context,
        attempted=attempted or [f"{failures} iterations of the agent"],
        choices=choices(task),
        trigger="verify-failures",
        raised_by="supervisor",
        task=task,
        iteration=iteration,
        summary=summary,
    )


def missing_env(*, names: Sequence[str], task: str | None, iteration: int, pid: int) -> Escalation:
    listed = ", ".join(names)
    plural = "s are" if len(names) > 1 else " is"
    return Escalation(
        question=ask(
            f"Required environment variable{plural} not set: {listed}",
            "restart loopkit run with it set?",
        ),
        context="\n".join(
            [
                f"[loop] required_env lists {listed}; unset or empty at the head of "
                f"iteration {iteration}.",
                "Export it where `loopkit run` starts and restart it, then delete BLOCKED.md.",
                "Do not reply with the secret itself: replies are stored and shown to the agent.",
            ]
        ),
        attempted=[f"read the environment of loopkit run (pid {pid})"],
        choices=choices(task),
        trigger="missing-credential",
        raised_by="supervisor",
        task=task,
        iteration=iteration,
    )


def dependency_down(
    *, command: str, tries: Sequence[str], last_output: str, task: str | None, iteration: int
) -> Escalation:
    sig = signature(last_output) or ["(no output)"]
    summary = {"context": f"preflight `{fold(command, 60)}`: {sig[-1]}"}
    return Escalation(
        question=ask(
            f"Preflight `{fold(command, 60)}` failed {len(tries)} times", "is something down?"
        ),
        context="\n".join([f"Preflight: `{fold(command, 100)}`", *(f"> {line}" for line in sig)]),
        attempted=list(tries),
        choices=choices(task),
        trigger="dependency-down",
        raised_by="supervisor",
        task=task,
        iteration=iteration,
        summary=summary,
    )


def agent_api_down(
    *, error: str, since: str, tries: int, task: str | None, iteration: int
) -> Escalation:
    """The agent's API has been down (rate-limited, overloaded) for ``[loop] dependency_wait``."""
    return Escalation(
        question=ask(
            f"The agent's API has failed since {since[11:16]} UTC ({error})", "keep waiting?"
        ),
        context="\n".join(
            [
                f"Claude Code's StopFailure hook: {error}",
                f"{tries} tries since {since}; none counted as a verify failure.",
                "Retry waits on; a reply that names a fix (a new key, a plan) goes to the agent.",
            ]
        ),
        attempted=[f"{tries} agent runs with backoff since {since}"],
        choices=choices(task),
        trigger="dependency-down",
        raised_by="supervisor",
        task=task,
        iteration=iteration,
        summary={"context": f"agent API down: {fold(error, 60)}"},
    )


def agent_credential(*, error: str, task: str | None, iteration: int) -> Escalation:
    """The agent's API refused its login or its billing: nothing to wait for."""
    return Escalation(
        question=ask(f"The agent's API refused it ({error})", "fix the credential, then retry?"),
        context="\n".join(
            [
                f"Claude Code's StopFailure hook: {error}",
                "Log in again (`claude /login`) or fix the key or billing where loopkit runs.",
                "Do not reply with the secret itself: replies are stored and shown to the agent.",
            ]
        ),
        attempted=["one agent run: refused at once"],
        choices=choices(task),
        trigger="missing-credential",
        raised_by="supervisor",
        task=task,
        iteration=iteration,
    )


def adopted(escalation: Escalation, *, task: str | None, iteration: int) -> Escalation:
    """An agent's hand-written block, as the supervisor raises it. A file offering no
    choices gets the supervisor's own (and so its *Skip* and *Abort* are acted on)."""
    own = not escalation.choices
    return replace(
        escalation,
        choices=escalation.choices or choices(task),
        raised_by="supervisor" if own else None,
        task=task,
        iteration=iteration,
    )
