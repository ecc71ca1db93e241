"""The stuck detector: signals that a loop goes nowhere, beyond verify failing (SPEC §19, §25).

Pure: it is handed what one iteration did (:class:`Observation`: how many places the task's
change reached that it had not reached before — :mod:`loopkit.supervisor.reach` —, whether
a task was ticked, the agent's and verify's endings and output, the cost) and its counters
(:class:`Counters`, kept in ``state.json``), and says which signals crossed their threshold
(:class:`Signal`, with the evidence). It runs nothing and reads no file, so the supervisor
(:mod:`loopkit.supervisor.stuck_watch`) and the benchmark (``benchmarks/stuck.py``) replay
the same logic. Each threshold ``0`` (or unset, for the budgets) turns its trigger off.

An iteration *breaks new ground* (``Detector.broke_new_ground``) when the task's change
reached a file or line it had not reached, or verify's outcome is new to the task once it
has failed in it (:mod:`loopkit.supervisor.failure`: another failing test or message, a
later step, fewer failing tests; the first pass) — an outcome that comes back (A, B, A, B)
is not new, and the task's first failure is where it stands, not a step —, or a task was
ticked while verify passed. Then:

- ``no_progress``: iterations in a row that break no new ground (nothing done, a file
  flipped back, the same lines rewritten, only comments, timestamps or counters touched).
- ``same_error``: verify failures in a row with the same failure, each breaking no new
  ground — or ticking a task over it (a task declared done over an unchanged failure is not
  progress against it, across tasks). Another failure, a pass, or new ground ends the row.
- ``repeated_output``: agent outputs in a row, breaking no new ground, that are near-copies
  (similarity ≥ :data:`SIMILAR`, after the same masking, head and tail alike) of one of the
  last :data:`KEEP_OUTPUTS` outputs.
- ``crash_loop``: agent runs in a row that exit non-zero, time out or cannot start, and
  reach nothing new in the workspace; a run that reports a rate limit or an overload is an
  outage (dependency down), not a crash, and neither counts nor resets.
- Budgets: ``max_task_iterations`` and ``task_timeout`` (looked at before an iteration
  starts, :meth:`Detector.begin`), ``max_cost_usd`` (the spend since the last approval).

A signal says what it is (:attr:`Signal.label`): iterations lost to the agent's API being
down are *dependency down*, to its calls being refused *denied* (with the call), a crash
shows its exit and its last line (:attr:`Signal.detail`).

When a block ends — a human's answer, or the loop's timeout action — the counters of the
signals it carried are reset
(:func:`~loopkit.supervisor.stuck_counters.block_ended`), and only those.
"""

from __future__ import annotations

import re

from loopkit.clock import iso_seconds, parse_iso
from loopkit.datarecord import record, replace
from loopkit.message import fold
from loopkit.supervisor.failure import read
from loopkit.supervisor.normalise import normalise
from loopkit.supervisor.stuck_counters import (
    COST,
    CRASH_LOOP,
    DENIED,
    DEPENDENCY_DOWN,
    NO_PROGRESS,
    REPEATED_OUTPUT,
    SAME_ERROR,
    TASK_ITERATIONS,
    TASK_TIMEOUT,
    span,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

    from loopkit.config import StuckConfig
    from loopkit.supervisor.failure import Failure
    from loopkit.supervisor.stuck_counters import (
        Counters,
    )

SIMILAR = 0.9  # rapidfuzz's normalised similarity (0..1) at which two outputs are copies
KEEP_OUTPUTS = 4  # the earlier outputs a new one is compared with
OUTPUT_CHARS = 2000  # of an output's end compared (and the whole of a shorter one) …
HEAD_CHARS = 600  # … and of its start: a long output is a copy when both are
MIN_OUTPUT = 40  # shorter outputs (after masking) say too little to be called copies
KEEP_LINES = 6  # evidence lines kept per trigger
KEEP_FAILURES = 64  # the verify outcomes remembered per task (failures' keys, PASSED)
PASSED = "passed"  # verify's outcome when it passed, among the failures' keys


@record(frozen=True, slots=True)
class Observation:
    """What one iteration did, as the detector sees it."""

    iteration: int
    task: str | None  # the task it ran on
    reached: int | None = None  # places the task's change reached anew (None: not looked at)
    reached_note: str = ""  # what the change did, when it reached nothing new
    head: str | None = None  # the HEAD commit then, for the evidence
    ticked: bool = False  # the task it ran on was ticked off during it
    agent_ending: str = "exited"  # runner endings: exited, timeout, not-started, …
    agent_exit: int | None = 0
    agent_output: str = ""  # the end of its output (the runner's tail)
    agent_head: str = ""  # the start of its output, when longer than the tail
    verify_exit: int | None = None  # None: verify did not run
    verify_output: str = ""
    cost_usd: float | None = None
    outage: str = ""  # the API error that ended the run (a rate limit, an overload)
    denied: str = ""  # a call of the agent's that was refused: ``Bash(git push)``


@record(frozen=True, slots=True)
class Signal:
    """A trigger that crossed its threshold, with what a human needs to judge it."""

    trigger: str  # one of TRIGGERS
    count: float  # iterations, seconds or dollars
    threshold: float
    question: str  # what happened, one line, without the task
    context: list[str]
    attempted: list[str]
    detail: str = ""  # the one fact the question names: a failing test, an exit, a call
    label: str | None = None  # DEPENDENCY_DOWN, DENIED: what the iterations were lost to


def similarity(a: str, b: str) -> float:
    """rapidfuzz's normalised Indel similarity of the two texts' words, 0..1.

    Over words, not characters: an agent reporting its steps in one template ("Implemented
    step 3 in step3.py") changes a few words in ten, a character ratio would call those
    copies; a near-copy differs in a word or two of many. rapidfuzz is imported only when
    outputs are compared: a heavy import no everyday command may pay."""
    from rapidfuzz.distance import Indel

    return float(Indel.normalized_similarity(a.split(), b.split()))


def _keep(lines: list[str], line: str) -> list[str]:
    return [*lines, line][-KEEP_LINES:]


# Compiled on first use, by re's cache (not at import: SPEC §20).
_ERRORISH = (
    r"(?i)error|fail|exception|traceback|assert|panic|fatal|denied|refused|not found|timed? ?out"
)
_BANNER = r"^[=\-_~! ]{3,}|[=\-_~! ]{3,}$"  # a trailing *** is a redaction, kept


# Lines that state an error, the most telling first: pytest's "E   …", "error[E0308]: …",
# "error TS2322", "ValueError: …", a panic; then a lint's "src/x.py:3:1: F401 …", pytest's
# FAILED and ERROR summaries, "fatal:", "Error:".
_STATES_ERROR = (
    r"^(E\s+\S|error(\[\w+\])?:|.*\berror TS\d+|(\w+\.)*\w*(Error|Exception):|.*panicked at)",
    r"^(\S+:\d+(:\d+)?:? [A-Z]+\d+|FAILED\b|ERROR\b|fatal:|Error:)",
)


def _first_line(output: str) -> str:
    """The error's first line: the first that states an error (banners stripped), else the
    first that mentions one, else the last line; folded to 200 characters."""
    lines = [re.sub(_BANNER, "", line).strip() for line in output.splitlines()]
    lines = [line for line in lines if line]
    tiers = [[line for line in lines if re.match(pattern, line)] for pattern in _STATES_ERROR]
    errorish = [line for line in lines if re.search(_ERRORISH, line)]
    chosen = (tiers[0] or tiers[1] or errorish or lines[-1:] or ["(no output)"])[0]
    return fold(chosen, 200)


class Detector:
    """Counts the signals over ``counters`` as ``settings`` say (a reload hands new ones)."""

    def __init__(self, settings: StuckConfig, counters: Counters) -> None:
        self.settings = settings
        self.counters = counters
        self.broke_new_ground = False  # whether the last observed iteration did
        self.failure: Failure | None = None  # the last observed verify failure, read

    # --- before the agent runs -------------------------------------------------------------

    def begin(self, task: str | None, now: datetime) -> list[Signal]:
        """At an iteration's head: the budgets of the task it is about to run on."""
        c = self.counters
        if task != c.task or c.task_started is None:
            if task != c.task:
                c.task, c.task_iterations = task, 0
            c.task_started = iso_seconds(now)
        found: list[Signal] = []
        limit = self.settings.max_task_iterations
        on = f"task '{fold(task, 80)}'" if task else "the task"
        if limit and c.task_iterations >= limit:
            found.append(
                Signal(
                    TASK_ITERATIONS,
                    c.task_iterations,
                    limit,
                    f"{c.task_iterations} iterations on {on} (max_task_iterations = {limit})",
                    [
                        f"Budget: [stuck] max_task_iterations = {limit}",
                        f"Iterations on this task so far: {c.task_iterations}",
                    ],
                    [f"{c.task_iterations} agent runs on this task since {c.task_started or '?'}"],
                )
            )
        timeout = self.settings.task_timeout
        try:
            started = parse_iso(c.task_started or "")
        except ValueError:
            started = now
        spent = (now - started).total_seconds()
        if timeout and spent >= timeout:
            found.append(
                Signal(
                    TASK_TIMEOUT,
                    spent,
                    timeout,
                    f"{span(spent)} on {on} (task_timeout = {span(timeout)})",
                    [
                        f"Budget: [stuck] task_timeout = {span(timeout)}",
                        f"On this task since {c.task_started} ({span(spent)})",
                    ],
                    [f"{c.task_iterations} agent runs on this task"],
                )
            )
        if not found:
            c.task_iterations += 1
        return found

    # --- after the agent (and verify) ran --------------------------------------------------

    def observe(self, seen: Observation) -> list[Signal]:
        """Count what one iteration did; the signals now at or past their threshold."""
        new_failure = self._verify(seen)
        passed = seen.verify_exit is None or seen.verify_exit == 0
        self.broke_new_ground = bool(seen.reached) or new_failure or (seen.ticked and passed)
        c = self.counters
        c.outages = c.outages + 1 if seen.outage else 0
        c.denials = c.denials + 1 if seen.denied else 0
        found = [
            *self._progress(seen),
            *self._error(seen),
            *self._output(seen),
            *self._crash(seen),
        ]
        found = [self._labelled(signal, seen) for signal in found]
        return [*found, *self._cost(seen)]

    def _verify(self, seen: Observation) -> bool:
        """Read verify's failure (if it failed); whether its outcome is new to the task: a
        failure not seen before in it, or fewer failing than ever, once the task has failed
        at all (its first failure is where it stands, not a step); a first pass after
        failures. An outcome that comes back (A, B, A, B; a pass, a failure, a pass) is
        not new."""
        c = self.counters
        key = _task_key(seen.task)
        if key != c.ground_task:
            c.ground_task, c.failures_seen, c.fewest_failing = key, [], -1
        self.failure = None
        if seen.verify_exit is None:
            return False
        failed_before = any(k != PASSED for k in c.failures_seen)
        if seen.verify_exit == 0:
            new = failed_before and PASSED not in c.failures_seen
            c.failures_seen = _remember(c.failures_seen, PASSED)
            return new

        failure = self.failure = read(seen.verify_output, seen.verify_exit)
        unseen = failure.key not in c.failures_seen
        fewer = failure.count is not None and 0 < failure.count < c.fewest_failing
        c.failures_seen = _remember(c.failures_seen, failure.key)
        if failure.count is not None and (c.fewest_failing < 0 or failure.count < c.fewest_failing):
            c.fewest_failing = failure.count
        return failed_before and (unseen or fewer)

    def _progress(self, seen: Observation) -> list[Signal]:
        limit, c = self.settings.no_progress, self.counters
        if not limit or seen.reached is None:
            return []
        if self.broke_new_ground:
            c.no_progress, c.quiet, c.head = 0, [], seen.head
            return []
        if c.no_progress == 0:
            c.head = c.head or seen.head
        c.no_progress += 1
        how = seen.reached_note or "no change"
        if seen.verify_exit not in (None, 0):
            how += "; verify failed as before"
        c.quiet = _keep(c.quiet, f"iteration {seen.iteration}: {how}")
        if c.no_progress < limit:
            return []
        if not seen.head:
            commit = "no commit (not in git)"
        elif seen.head == c.head:
            commit = f"HEAD {seen.head[:12]} unchanged"
        else:
            commit = f"HEAD now {seen.head[:12]}, its commits reaching nothing new"
        plural = "s" if c.no_progress != 1 else ""
        return [
            Signal(
                NO_PROGRESS,
                c.no_progress,
                limit,
                f"No progress in {c.no_progress} iteration{plural}",
                [
                    f"{commit}; the task's change reaches no file or line it had not reached, "
                    "and verify fails no new way",
                    f"Threshold: [stuck] no_progress = {limit}",
                ],
                list(c.quiet),
            )
        ]

    def _error(self, seen: Observation) -> list[Signal]:
        limit, c, failure = self.settings.same_error, self.counters, self.failure
        if not limit or seen.verify_exit is None:
            return []
        if failure is None:  # verify passed
            c.same_error, c.errors = 0, []
            return []
        if failure.key != c.error_fingerprint:
            c.same_error, c.errors = 0, []
            c.error_fingerprint, c.error_line, c.error_test = (
                failure.key, failure.line, failure.test or "",
            )  # fmt: skip
            c.error_brief = failure.brief if failure.line != "(no output)" else ""
            return []
        if self.broke_new_ground and not seen.ticked:
            c.same_error, c.errors = 0, []  # the work lands around a failure that stands
            return []
        c.same_error += 1
        where = f" on task '{fold(seen.task, 60)}'" if seen.task else ""
        c.errors = _keep(c.errors, f"iteration {seen.iteration}{where}: exit {seen.verify_exit}")
        if c.same_error < limit:
            return []
        return [
            Signal(
                SAME_ERROR,
                c.same_error,
                limit,
                f"Verify failed with the same error {c.same_error} times in a row",
                [
                    f"> {c.error_line}",
                    *([f"Failing test: {c.error_test}"] if c.error_test else []),
                    f"Fingerprint {c.error_fingerprint} (the failing tests and their first "
                    "error lines, with times, ports, temp names, counts and values masked)",
                    f"Threshold: [stuck] same_error = {limit}",
                ],
                list(c.errors),
                detail=c.error_brief or c.error_line,
            )
        ]

    def _output(self, seen: Observation) -> list[Signal]:
        limit, c = self.settings.repeated_output, self.counters
        if not limit:
            return []

        text = normalise(_whole_output(seen))
        if len(text) < MIN_OUTPUT:
            c.repeated_output, c.repeats = 0, []
            return []
        best = max((_alike(text, old) for old in c.outputs), default=0.0)
        c.outputs = [*c.outputs, _kept(text)][-KEEP_OUTPUTS:]
        if best < SIMILAR or self.broke_new_ground:
            c.repeated_output, c.repeats = 0, []
            return []
        c.repeated_output += 1
        c.repeats = _keep(c.repeats, f"iteration {seen.iteration}: similarity {best:.2f}")
        if c.repeated_output < limit:
            return []
        line = _first_line(seen.agent_output)
        return [
            Signal(
                REPEATED_OUTPUT,
                c.repeated_output,
                limit,
                f"The agent wrote nearly the same output {c.repeated_output} times in a row "
                f"(similarity {best:.2f})",
                [
                    f"> {line}",
                    f"Similarity {best:.2f} ≥ {SIMILAR} to an earlier output",
                    f"Threshold: [stuck] repeated_output = {limit}",
                ],
                list(c.repeats),
            )
        ]

    def _crash(self, seen: Observation) -> list[Signal]:
        limit, c = self.settings.crash_loop, self.counters
        if not limit or seen.outage:
            return []
        failed = seen.agent_ending in ("timeout", "not-started") or (
            seen.agent_ending == "exited" and seen.agent_exit not in (0, None)
        )
        if not failed or seen.reached is None or seen.reached:
            c.crash_loop, c.crashes = 0, []
            return []
        c.crash_loop += 1
        how = _ending(seen)
        c.crashes = _keep(c.crashes, f"iteration {seen.iteration}: agent {how}, nothing changed")
        if c.crash_loop < limit:
            return []
        last = _last_line(seen.agent_output)
        detail = f"{how}: {last}" if last else how
        return [
            Signal(
                CRASH_LOOP,
                c.crash_loop,
                limit,
                f"The agent crashed {c.crash_loop} times in a row without changing anything",
                [f"> {last or '(no output)'}", f"Threshold: [stuck] crash_loop = {limit}"],
                list(c.crashes),
                detail=detail,
            )
        ]

    def _labelled(self, signal: Signal, seen: Observation) -> Signal:
        """The signal as what its iterations were lost to: the agent's API down, its calls
        refused — when the runs that counted (two at least, or all) say so."""
        c, least = self.counters, min(2, int(signal.count))
        if seen.outage and c.outages >= least:
            runs = f"{c.outages} run{'s' if c.outages != 1 else ''} in a row"
            return replace(signal, label=DEPENDENCY_DOWN, detail=seen.outage,
                           context=[f"The agent's API failed {runs}: {seen.outage}",
                                    *signal.context])  # fmt: skip
        if seen.denied and c.denials >= least:
            runs = f"{c.denials} run{'s' if c.denials != 1 else ''} in a row"
            said = f"Refused in {runs}: {seen.denied}"
            return replace(signal, label=DENIED, detail=seen.denied,
                           context=[said, *signal.context])  # fmt: skip
        return signal

    def _cost(self, seen: Observation) -> list[Signal]:
        c = self.counters
        if seen.cost_usd:
            c.spent_usd += seen.cost_usd
        limit = self.settings.max_cost_usd
        spent = c.spent_usd - c.approved_usd
        if not limit or spent < limit:
            return []
        since = " since the last approval" if c.approved_usd else ""
        return [
            Signal(
                COST,
                spent,
                limit,
                f"The agent has spent ${spent:.2f}{since} (max_cost_usd = ${limit:.2f})",
                [
                    f"Budget: [stuck] max_cost_usd = ${limit:.2f}",
                    f"Spent in all: ${c.spent_usd:.2f} (the agent's reported usage, summed)",
                ],
                [f"iteration {seen.iteration}: +${seen.cost_usd or 0:.2f}, ${spent:.2f}{since}"],
            )
        ]


def _remember(keys: list[str], key: str) -> list[str]:
    return keys if key in keys else [*keys, key][-KEEP_FAILURES:]


def _task_key(task: str | None) -> str:
    """A task as the counters name it: ``task:<name>``, or ``-`` for the whole loop."""
    return "-" if task is None else f"task:{task}"


def _whole_output(seen: Observation) -> str:
    """The agent's output as far as it was kept: its head and its tail (the head alone when
    the whole output fit in the tail)."""
    head, tail = seen.agent_head, seen.agent_output
    if not head or tail.startswith(head) or head.endswith(tail):
        return tail if len(tail) >= len(head) else head
    return f"{head}\n{tail}"


def _alike(text: str, old: str) -> float:
    """How alike two normalised outputs are: the whole of short ones; of long ones, the
    lesser of their heads' and their tails' similarity — a constant report at the end (a
    lint run, a plan) does not make two outputs copies when what the agent says it did, at
    the start, differs."""
    if max(len(text), len(old)) <= OUTPUT_CHARS:
        return similarity(text, old)
    tails = similarity(text[-OUTPUT_CHARS:], old[-OUTPUT_CHARS:])
    return min(tails, similarity(text[:HEAD_CHARS], old[:HEAD_CHARS]))


def _kept(text: str) -> str:
    """What of a normalised output the counters keep: all of a short one, the head and the
    tail of a long one, end to end (:func:`_alike` compares them apart again)."""
    if len(text) <= OUTPUT_CHARS + HEAD_CHARS:
        return text
    return f"{text[:HEAD_CHARS]}{text[-OUTPUT_CHARS:]}"


def _ending(seen: Observation) -> str:
    if seen.agent_ending == "timeout":
        return "timed out"
    if seen.agent_ending == "not-started":
        return "could not start"
    return f"exit {seen.agent_exit}"


def _last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return fold(lines[-1], 120) if lines else ""
