"""A runaway inside one agent turn (SPEC section 24): the same call again and again, two
calls in alternation, or silence.

Pure, like :mod:`~loopkit.supervisor.stuck`: it is handed each tool call as the agent's
event stream names it (:class:`Call`), each sign of life, and the time (a monotonic clock:
tests hand it theirs), and says when a threshold of ``[stuck]`` is crossed, with the
evidence (:class:`~loopkit.supervisor.stuck.Signal`). It starts afresh with each turn.

- ``same_call``: the same call — the same tool, and the same of what it runs (a command, a
  file and its content: :func:`loopkit.hooks.approve.what_runs`, never the agent's
  description of it), masked as ``same_error`` masks output
  (:func:`~loopkit.supervisor.normalise.normalise`: timestamps, durations, temporary paths,
  pids, line numbers) — this many times in a row. Any other call between two breaks the
  row: a loop that edits and re-runs its tests is working, not running away.
- ``ping_pong``: two calls alternating, A B A B …, for this many cycles (a cycle is an A and
  a B). A third call, or one repeated, breaks it.
- ``silent``: no event and no output for this long (:meth:`Runaway.due` says when).

Each fires once per turn: the watch stops the turn at the first.
"""

from __future__ import annotations

import json

from loopkit.datarecord import record
from loopkit.hooks.approve import what_runs
from loopkit.message import clean, fold
from loopkit.supervisor.normalise import normalise
from loopkit.supervisor.stuck import Signal
from loopkit.supervisor.stuck_counters import PING_PONG, SAME_CALL, SILENT, span

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import StuckConfig

SHOWN = 300  # characters of a call in a question's Context
# What names a call for a human, the first found: a command as it runs, else a path, …
SHOWN_KEYS = ("command", "cmd", "file_path", "notebook_path", "path", "dir_path", "pattern",
              "url", "query")  # fmt: skip


@record(frozen=True, slots=True)
class Call:
    """One tool call: ``tool``, ``shown`` (what a human reads: a command as it runs, a
    tool and its path, else the tool and its input) and ``key`` (what two calls share when
    they are the same call)."""

    tool: str
    shown: str
    key: str


def call_of(tool: str, given: Any, redact: Callable[[str], str] = str) -> Call:
    """The call ``tool`` with input ``given``, as the detector compares it and a human
    reads it (``redact`` masks the secrets in what is shown)."""
    runs = what_runs(tool, given)
    encoded = json.dumps(runs, sort_keys=True, ensure_ascii=False, default=str)
    key = f"{tool}\n{normalise(encoded)}"
    shown = encoded
    if isinstance(given, dict):
        named = next((given[k] for k in SHOWN_KEYS if isinstance(given.get(k), str)), None)
        if named is not None:
            shown = named
    return Call(tool, fold(clean(redact(f"{tool}: {shown}")), SHOWN), key)


class Runaway:
    """Watches one turn's calls and silence as ``settings`` (``[stuck]``) say; ``now``: the
    turn's start (monotonic seconds)."""

    def __init__(self, settings: StuckConfig, now: float) -> None:
        self.settings = settings
        self.heard_at = now
        self.calls: list[Call] = []  # the turn's calls, newest last (only a few are kept)
        self.count = 0  # calls so far
        self._row = 0  # the newest call, this many times in a row
        self._alternating = 0  # the newest calls alternating between two, this many
        self._results: dict[str, str] = {}  # a call's key → its last result's first line
        self.fired: Signal | None = None

    def heard(self, now: float) -> None:
        """An event or output: the agent is not silent."""
        self.heard_at = max(self.heard_at, now)

    def due(self) -> float | None:
        """When the turn will have been silent too long (None: ``silent`` is off, or it
        fired already)."""
        if not self.settings.silent or self.fired is not None:
            return None
        return self.heard_at + self.settings.silent

    def outcome(self, call: Call, text: str, *, failed: bool) -> None:
        """What ``call`` gave back, on one line, kept for the evidence."""
        self._results[call.key] = ("✗ " if failed else "→ ") + fold(clean(text), 160)

    def call(self, call: Call, now: float) -> Signal | None:
        """Count ``call``; the signal it crosses a threshold with, once."""
        self.heard(now)
        last = self.calls[-1] if self.calls else None
        before = self.calls[-2] if len(self.calls) > 1 else None
        if last is not None and call.key == last.key:
            self._row += 1
            self._alternating = 1
        else:
            self._row = 1
            if last is None:
                self._alternating = 1
            elif self._alternating >= 2 and before is not None and call.key == before.key:
                self._alternating += 1
            else:
                self._alternating = 2
        self.count += 1
        self.calls = [*self.calls, call][-2 * max(self.settings.ping_pong, 1) - 2 :]
        if self.fired is not None:
            return None
        limit = self.settings.same_call
        if limit and self._row >= limit:
            self.fired = self._same(call, limit)
        cycles = self._alternating // 2
        if self.fired is None and self.settings.ping_pong and cycles >= self.settings.ping_pong:
            self.fired = self._ping_pong(last or call, call, cycles)
        return self.fired

    def silence(self, now: float, running: Call | None, since: float | None) -> Signal | None:
        """The ``silent`` signal, once the turn has been silent too long (``running``: the
        call that runs meanwhile, started at ``since``)."""
        due = self.due()
        if due is None or now < due or self.settings.silent is None:
            return None
        quiet = now - self.heard_at
        limit = self.settings.silent
        what = (
            f"while {running.shown} ran (for {span(now - since)})"
            if running is not None and since is not None
            else "between two steps"
        )
        self.fired = Signal(
            SILENT,
            quiet,
            limit,
            f"The agent has been silent for {span(quiet)} in its turn",
            [
                f"No event and no output for {span(quiet)}, {what}",
                f"Calls in this turn so far: {self.count}",
                f"Threshold: [stuck] silent = {span(limit)}",
            ],
            [f"> {running.shown}"]
            if running is not None
            else [f"{self.count} calls, then silence"],
        )
        return self.fired

    def _same(self, call: Call, limit: int) -> Signal:
        result = self._results.get(call.key)
        first = self.count - self._row + 1
        return Signal(
            SAME_CALL,
            self._row,
            limit,
            f"The agent made the same call {self._row} times in a row in one turn",
            [
                f"> {call.shown}",
                *([f"Each time: {result}"] if result else []),
                f"Threshold: [stuck] same_call = {limit} (the same tool and input, masked as "
                "for same_error, nothing else between)",
            ],
            [f"the same call {self._row} times in a row: calls {first}–{self.count} of the "
             "turn"],
        )  # fmt: skip

    def _ping_pong(self, a: Call, b: Call, cycles: int) -> Signal:
        limit = self.settings.ping_pong
        shown = [f"> A: {a.shown} ⇄ B: {b.shown}"]
        results = [f"{name} gave {self._results[c.key]}" for name, c in (("A", a), ("B", b))
                   if c.key in self._results]  # fmt: skip
        return Signal(
            PING_PONG,
            cycles,
            limit,
            f"The agent alternated between the same two calls for {cycles} cycles in one turn",
            [*shown, *results, f"Threshold: [stuck] ping_pong = {limit} (cycles of A then B)"],
            [f"{self._alternating} calls in a row, A B A B …"],
        )
