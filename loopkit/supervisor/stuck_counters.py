"""The stuck triggers' names, their thresholds and counters — what ``status`` and ``doctor``
read without running the detector (SPEC §19, §25).

The counters are the detector's memory (:mod:`loopkit.supervisor.stuck`), kept in
``state.json`` (``stuck``) so a restart carries on; a block that ends resets those of the
signals it carried (:func:`block_ended`), and only those. Nothing here masks or compares
output: the detector's heavy parts (masking, failure reading, similarity) load with it,
never with ``loopkit status``.
"""

from __future__ import annotations

from loopkit.datarecord import field, fields, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import StuckConfig

DEPENDENCY_DOWN = "dependency down"  # Signal.label: the agent's API was down
DENIED = "denied"  # Signal.label: the agent's calls were refused

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


@record(slots=True)
class Counters:
    """The detector's memory, kept in ``state.json`` (``stuck``) so a restart carries on."""

    ground_task: str = ""  # the task the failures below were seen in (see _task_key)
    failures_seen: list[str] = field(default_factory=list)  # verify outcomes, in the task
    fewest_failing: int = -1  # the fewest failing in a failure of the task (-1: none yet)
    head: str | None = None  # the HEAD commit when the no-progress row began
    no_progress: int = 0
    quiet: list[str] = field(default_factory=list)  # evidence of the no-progress iterations
    same_error: int = 0
    error_fingerprint: str | None = None
    error_line: str = ""
    error_test: str = ""
    error_brief: str = ""  # the failing test and its first error line, for the question
    errors: list[str] = field(default_factory=list)
    repeated_output: int = 0
    outputs: list[str] = field(default_factory=list)  # normalised, the newest last
    repeats: list[str] = field(default_factory=list)
    crash_loop: int = 0
    crashes: list[str] = field(default_factory=list)
    outages: int = 0  # runs in a row that hit an outage
    denials: int = 0  # runs in a row that had a call refused
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


def span(seconds: float) -> str:
    """``seconds`` for a human: ``45 s``, ``12 min``, ``1 h 05 min``."""
    minutes = int(seconds // 60)
    if minutes < 1:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"
