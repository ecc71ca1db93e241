"""The stuck detector: signals that a loop goes nowhere, beyond verify failing (SPEC section 19).

Pure: it is handed what one iteration did (:class:`Observation`: the workspace's digest
after it, the agent's and verify's endings and output, the cost) and its counters
(:class:`Counters`, kept in ``state.json``), and says which signals crossed their threshold
(:class:`Signal`, with the evidence). It runs nothing and reads no file, so the supervisor
(:mod:`loopkit.supervisor.stuck_watch`) and the benchmark (``benchmarks/stuck.py``) replay
the same logic. Each threshold ``0`` (or unset, for the budgets) turns its trigger off.

- ``no_progress``: iterations in a row that end in a workspace state seen during the last
  few iterations (nothing done, or a file flipped back and forth). A new state resets it.
- ``same_error``: verify failures in a row with the same normalised output
  (:mod:`loopkit.supervisor.normalise`), across tasks; a pass resets it.
- ``repeated_output``: agent outputs in a row that are near-copies (similarity ≥
  :data:`SIMILAR`, after the same masking) of one of the last :data:`KEEP_OUTPUTS` outputs.
- ``crash_loop``: agent runs in a row that exit non-zero, time out or cannot start, and
  change nothing; a run whose Claude result names a rate limit or an overload is an outage
  (dependency down), not a crash, and neither counts nor resets.
- Budgets: ``max_task_iterations`` and ``task_timeout`` (looked at before an iteration
  starts, :meth:`Detector.begin`), ``max_cost_usd`` (the spend since the last approval).

When a block ends — a human's answer, or the loop's timeout action — the counters of the
signals it carried are reset (:func:`block_ended`), and only those.
"""

from __future__ import annotations

import re

from loopkit.clock import iso_seconds, parse_iso
from loopkit.datarecord import field, fields, record
from loopkit.message import fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from loopkit.config import StuckConfig

SIMILAR = 0.9  # rapidfuzz's normalised similarity (0..1) at which two outputs are copies
KEEP_OUTPUTS = 4  # the earlier outputs a new one is compared with
OUTPUT_CHARS = 2000  # the end of each output that is kept and compared
MIN_OUTPUT = 40  # shorter outputs (after masking) say too little to be called copies
KEEP_LINES = 6  # evidence lines kept per trigger

NO_PROGRESS = "no_progress"
SAME_ERROR = "same_error"
REPEATED_OUTPUT = "repeated_output"
CRASH_LOOP = "crash_loop"
TASK_ITERATIONS = "max_task_iterations"
TASK_TIMEOUT = "task_timeout"
COST = "max_cost_usd"
# Inside one turn, read from the agent's event stream (loopkit.supervisor.runaway).
SAME_CALL = "same_call"
PING_PONG = "ping_pong"
SILENT = "silent"
IN_TURN = (SAME_CALL, PING_PONG, SILENT)
TRIGGERS = (
    NO_PROGRESS, SAME_ERROR, REPEATED_OUTPUT, CRASH_LOOP, TASK_ITERATIONS, TASK_TIMEOUT, COST,
    *IN_TURN,
)  # fmt: skip


def request_trigger(name: str) -> str:
    """The ``trigger`` a request raised for signal ``name`` carries: ``stuck-no-progress``."""
    return "stuck-" + name.replace("_", "-")


def in_turn(trigger: str | None) -> bool:
    """Whether a request's ``trigger`` is a runaway stopped inside one turn: its answer
    resumes the agent's session (SPEC section 24)."""
    return trigger in {request_trigger(name) for name in IN_TURN}


@record(frozen=True, slots=True)
class Observation:
    """What one iteration did, as the detector sees it."""

    iteration: int
    task: str | None
    after: str | None  # the workspace's digest at the end (None: not taken)
    head: str | None = None  # the HEAD commit then, for the evidence
    agent_ending: str = "exited"  # runner endings: exited, timeout, not-started, …
    agent_exit: int | None = 0
    agent_output: str = ""
    verify_exit: int | None = None  # None: verify did not run
    verify_output: str = ""
    cost_usd: float | None = None
    outage: bool = False  # the agent hit a rate limit or an overload (dependency down)


@record(frozen=True, slots=True)
class Signal:
    """A trigger that crossed its threshold, with what a human needs to judge it."""

    trigger: str  # one of TRIGGERS
    count: float  # iterations, seconds or dollars
    threshold: float
    question: str  # what happened, one line, without the task
    context: list[str]
    attempted: list[str]


@record(slots=True)
class Counters:
    """The detector's memory, kept in ``state.json`` (``stuck``) so a restart carries on."""

    last_state: str | None = None  # the workspace's digest when the last iteration ended
    states: list[str] = field(default_factory=list)  # recent digests, oldest first
    no_progress: int = 0
    quiet: list[str] = field(default_factory=list)  # evidence of the no-progress iterations
    same_error: int = 0
    error_fingerprint: str | None = None
    error_line: str = ""
    errors: list[str] = field(default_factory=list)
    repeated_output: int = 0
    outputs: list[str] = field(default_factory=list)  # normalised, the newest last
    repeats: list[str] = field(default_factory=list)
    crash_loop: int = 0
    crashes: list[str] = field(default_factory=list)
    task: str | None = None
    task_iterations: int = 0
    task_started: str | None = None  # ISO, wall clock (None: from the next iteration on)
    spent_usd: float = 0.0
    approved_usd: float = 0.0  # the spend at the last approval (or at the start)
    pending: list[str] = field(default_factory=list)  # signals the open block carries

    def to_dict(self) -> dict[str, Any]:
        """Its fields, each list copied: what ``asdict`` gives, without its deep copy (run
        twice per iteration, SPEC §20)."""
        return {
            name: list(value) if isinstance(value, list) else value
            for name in _COUNTER_FIELDS
            for value in (getattr(self, name),)
        }

    @classmethod
    def from_dict(cls, data: object) -> Counters:
        """Tolerant: a field of the wrong type (a hand-edited file) starts afresh."""
        counters = cls()
        if not isinstance(data, dict):
            return counters
        for f in fields(cls):
            value = data.get(f.name)
            default = getattr(counters, f.name)
            if isinstance(default, list) and isinstance(value, list):
                setattr(counters, f.name, [v for v in value if isinstance(v, str)])
            elif isinstance(default, bool | list) or value is None:
                continue
            elif isinstance(default, float) and isinstance(value, int | float):
                setattr(counters, f.name, float(value))
            elif (isinstance(default, int) and type(value) is int) or (
                (default is None or isinstance(default, str)) and isinstance(value, str)
            ):
                setattr(counters, f.name, value)
        return counters

    def shown(self) -> dict[str, Any]:
        """The counters a human reads (``status --json``, ``doctor``)."""
        return {
            NO_PROGRESS: self.no_progress,
            SAME_ERROR: self.same_error,
            REPEATED_OUTPUT: self.repeated_output,
            CRASH_LOOP: self.crash_loop,
            "task_iterations": self.task_iterations,
            "task_started": self.task_started,
            "spent_usd": round(self.spent_usd, 4),
            "spent_since_approval_usd": round(self.spent_usd - self.approved_usd, 4),
        }


_COUNTER_FIELDS = tuple(f.name for f in fields(Counters))


def thresholds(settings: StuckConfig) -> dict[str, float | None]:
    """Each trigger's threshold; None = off."""
    return {
        NO_PROGRESS: settings.no_progress or None,
        SAME_ERROR: settings.same_error or None,
        REPEATED_OUTPUT: settings.repeated_output or None,
        CRASH_LOOP: settings.crash_loop or None,
        TASK_ITERATIONS: settings.max_task_iterations or None,
        TASK_TIMEOUT: settings.task_timeout or None,
        COST: settings.max_cost_usd or None,
        SAME_CALL: settings.same_call or None,
        PING_PONG: settings.ping_pong or None,
        SILENT: settings.silent or None,
    }


def report(settings: StuckConfig, saved: object) -> dict[str, Any]:
    """``status --json``'s and ``doctor``'s view: each threshold (None: off) and the counters
    as ``state.json`` holds them (``saved``: its ``stuck``)."""
    return {"thresholds": thresholds(settings), "counters": Counters.from_dict(saved).shown()}


def describe(shown: dict[str, Any]) -> str:
    """A :func:`report` on one line: ``no_progress 1/3, same_error 0/3, …, max_cost_usd off``."""
    counters = shown["counters"]
    now = {
        TASK_ITERATIONS: counters["task_iterations"],
        COST: f"${counters['spent_since_approval_usd']:.2f}",
    }
    parts = []
    for name, limit in shown["thresholds"].items():
        if limit is None:
            parts.append(f"{name} off")
        elif name in (TASK_TIMEOUT, SILENT):
            parts.append(f"{name} {span(limit)}")
        elif name == SAME_CALL:
            parts.append(f"{name} {limit:g} in a row")
        elif name == PING_PONG:
            parts.append(f"{name} {limit:g} cycles")
        elif name == COST:
            parts.append(f"{name} {now[COST]} of ${limit:.2f}")
        else:
            parts.append(f"{name} {now.get(name, counters.get(name))}/{limit:g}")
    return ", ".join(parts)


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
_BANNER = r"^[=\-_*#~ ]{3,}|[=\-_*#~ ]{3,}$"


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

    @property
    def needs_snapshot(self) -> bool:
        """Whether an iteration's workspace digest is looked at (no_progress, crash_loop)."""
        return bool(self.settings.no_progress or self.settings.crash_loop)

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
        before = self.counters.last_state
        found = [
            *self._progress(seen, before),
            *self._error(seen),
            *self._output(seen),
            *self._crash(seen, before),
            *self._cost(seen),
        ]
        if seen.after is not None:
            self.counters.last_state = seen.after
        return found

    def _progress(self, seen: Observation, before: str | None) -> list[Signal]:
        limit, c = self.settings.no_progress, self.counters
        if not limit or seen.after is None:
            return []
        window = max(2 * limit, 6)
        known = set(c.states) | ({before} if before else set())
        if before is None:  # the first digest: nothing to compare it with yet
            c.states = [seen.after]
            return []
        if seen.after in known:
            c.no_progress += 1
            how = "no change" if seen.after == before else "back to an earlier state"
            c.quiet = _keep(c.quiet, f"iteration {seen.iteration}: {how}")
        else:
            c.no_progress, c.quiet = 0, []
        c.states = _recent([*c.states, before, seen.after], window)
        if c.no_progress < limit:
            return []
        commit = f"HEAD {seen.head[:12]} unchanged" if seen.head else "no commit (not in git)"
        return [
            Signal(
                NO_PROGRESS,
                c.no_progress,
                limit,
                f"No progress in {c.no_progress} iteration{'s' if c.no_progress != 1 else ''}",
                [
                    f"{commit}; working tree and index reach no state new to the last "
                    f"{window} iterations",
                    f"Threshold: [stuck] no_progress = {limit}",
                ],
                list(c.quiet),
            )
        ]

    def _error(self, seen: Observation) -> list[Signal]:
        limit, c = self.settings.same_error, self.counters
        if not limit or seen.verify_exit is None:
            return []
        if seen.verify_exit == 0:
            c.same_error, c.errors = 0, []
            return []
        from loopkit.supervisor.normalise import fingerprint  # its masks: when a verify failed

        print_ = fingerprint(seen.verify_output)
        line = _first_line(seen.verify_output)
        if print_ == c.error_fingerprint:
            c.same_error += 1
        else:
            c.same_error, c.errors, c.error_fingerprint, c.error_line = 0 + 1, [], print_, line
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
                    f"Fingerprint {c.error_fingerprint} (timestamps, "
                    "durations, addresses, temp paths, pids, line numbers masked)",
                    f"Threshold: [stuck] same_error = {limit}",
                ],
                list(c.errors),
            )
        ]

    def _output(self, seen: Observation) -> list[Signal]:
        limit, c = self.settings.repeated_output, self.counters
        if not limit:
            return []
        from loopkit.supervisor.normalise import normalise  # `status` never needs it

        text = normalise(seen.agent_output)[-OUTPUT_CHARS:]
        if len(text) < MIN_OUTPUT:
            c.repeated_output, c.repeats = 0, []
            return []
        best = max((similarity(text, old) for old in c.outputs), default=0.0)
        if best >= SIMILAR:
            c.repeated_output += 1
            c.repeats = _keep(c.repeats, f"iteration {seen.iteration}: similarity {best:.2f}")
        else:
            c.repeated_output, c.repeats = 0, []
        c.outputs = [*c.outputs, text][-KEEP_OUTPUTS:]
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

    def _crash(self, seen: Observation, before: str | None) -> list[Signal]:
        limit, c = self.settings.crash_loop, self.counters
        if not limit or seen.outage:
            return []
        failed = seen.agent_ending in ("timeout", "not-started") or (
            seen.agent_ending == "exited" and seen.agent_exit not in (0, None)
        )
        unchanged = seen.after is not None and seen.after == before
        if not (failed and unchanged):
            c.crash_loop, c.crashes = 0, []
            return []
        c.crash_loop += 1
        how = "timed out" if seen.agent_ending == "timeout" else (
            "could not start" if seen.agent_ending == "not-started" else f"exit {seen.agent_exit}"
        )  # fmt: skip
        c.crashes = _keep(c.crashes, f"iteration {seen.iteration}: agent {how}, nothing changed")
        if c.crash_loop < limit:
            return []
        return [
            Signal(
                CRASH_LOOP,
                c.crash_loop,
                limit,
                f"The agent crashed {c.crash_loop} times in a row without changing anything",
                [f"> {_first_line(seen.agent_output)}", f"Threshold: [stuck] crash_loop = {limit}"],
                list(c.crashes),
            )
        ]

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
                    f"Spent in all: ${c.spent_usd:.2f} (Claude's total_cost_usd, summed)",
                ],
                [f"iteration {seen.iteration}: +${seen.cost_usd or 0:.2f}, ${spent:.2f}{since}"],
            )
        ]


def block_ended(c: Counters) -> list[str]:
    """A block ended: reset the counters of the signals it carried; the names reset."""
    names, c.pending = c.pending, []
    for name in names:
        if name == NO_PROGRESS:
            c.no_progress, c.quiet = 0, []
        elif name == SAME_ERROR:
            c.same_error, c.errors = 0, []
        elif name == REPEATED_OUTPUT:
            c.repeated_output, c.repeats = 0, []
        elif name == CRASH_LOOP:
            c.crash_loop, c.crashes = 0, []
        elif name == TASK_ITERATIONS:
            c.task_iterations = 0
        elif name == TASK_TIMEOUT:
            c.task_started = None  # the clock starts again at the next iteration
        elif name == COST:
            c.approved_usd = c.spent_usd
    return names


def _recent(states: list[str], window: int) -> list[str]:
    """The last ``window`` distinct states, each where it was last seen, oldest first."""
    seen: set[str] = set()
    kept: list[str] = []
    for state in reversed(states):
        if state not in seen:
            seen.add(state)
            kept.append(state)
    return kept[:window][::-1]


def span(seconds: float) -> str:
    """``seconds`` for a human: ``45 s``, ``12 min``, ``1 h 05 min``."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"
