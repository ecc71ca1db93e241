"""Loop traces, played: the corpora of ``benchmarks/stuck.py`` and its test (SPEC §19, §25).

A trace is a TOML file — one loop, iteration by iteration, as an agent session went:

- ``kind`` (``progressing`` or ``stuck``), ``description``, ``expect`` (the signals that
  must fire on a stuck trace: ``no_progress``, ``same_error``, ``repeated_output``,
  ``crash_loop``, ``max_verify_failures``, ``max_cost_usd``), ``stuck_from`` (the first
  iteration of the stuck pattern, or a table of one per signal), ``label`` (what the first
  question must say the iterations were lost to: ``dependency down``, ``denied``),
  ``git = true`` (it needs git: commits on branches; else it plays in a plain folder too);
- ``[files]``: the workspace at the start (committed, in git); ``plan``: the task list
  (``PLAN.md``, ``task_file``), its done items ``[x]``; ``done = true``: a ``done`` command
  that never says the loop is done; ``[config]``: loopkit.toml tables merged over the
  defaults (``[config.stuck] max_cost_usd``, ``[config.loop] iteration_timeout``);
- per ``[[iteration]]``: ``agent_output``, ``agent_exit`` (0), ``agent_ending =
  "timeout"`` (it hangs until killed, its diff written first), ``verify_output``,
  ``verify_exit`` (0), ``cost_usd`` (printed as Claude's result line), ``tick = true`` (it
  ticks the current task), ``task`` (the project's first corpus: the task it runs on, the
  one before ticked when it changes), and ``[iteration.diff]``: ``write`` and ``append``
  (file → text), ``touch``, ``delete``, ``commit`` (a message), ``run`` (shell commands, in
  git: ``git checkout -b …``).

:func:`play` runs as the loop's agent, verify and done (``python stuck_traces.py TRACE
agent``, the iteration from ``LOOPKIT_ITERATION``), so a trace goes through ``loopkit run``
itself; :func:`step_for` gives the same step to an in-process replay.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.com",
}
HANG = 600.0  # seconds an agent ending in "timeout" sleeps: iteration_timeout kills it first
TIMEOUT = 2.0  # iteration_timeout for traces with a hang
SIGNALS = ("no_progress", "same_error", "repeated_output", "crash_loop", "max_verify_failures",
           "max_cost_usd")  # fmt: skip
LABELS = {"dependency-down": "dependency down", "stuck-denied": "denied"}
VERIFY_LIMIT = 3  # [loop] max_verify_failures, the default


@dataclass
class Trace:
    path: Path
    data: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def kind(self) -> str:
        return str(self.data["kind"])

    @property
    def expect(self) -> list[str]:
        return list(self.data.get("expect", []))

    @property
    def steps(self) -> list[dict[str, Any]]:
        return list(self.data["iteration"])

    @property
    def needs_git(self) -> bool:
        return bool(self.data.get("git"))

    @property
    def tasks(self) -> list[str]:
        """The task list: ``plan`` (``[x]`` for a done one), or the ``task`` of each step."""
        if "plan" in self.data:
            return list(self.data["plan"])
        named = [str(s["task"]) for s in self.steps if s.get("task")]
        return list(dict.fromkeys(named))

    def stuck_from(self, signal: str) -> int | None:
        start = self.data.get("stuck_from")
        if isinstance(start, dict):
            start = start.get(signal, start.get("default"))
        return int(start) if start is not None else None


def load(path: Path) -> Trace:
    return Trace(path, tomllib.loads(path.read_text()))


def traces(folder: Path) -> list[Trace]:
    return [load(path) for path in sorted(folder.glob("*.toml"))]


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})  # fmt: skip


# --- the workspace ---------------------------------------------------------------------


def set_up(trace: Trace, ws: Path, *, use_git: bool) -> None:
    """The workspace at the trace's start: its files and plan (committed, in git)."""
    ws.mkdir(parents=True, exist_ok=True)
    for name, text in trace.data.get("files", {}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    if trace.tasks:
        lines = []
        for task in trace.tasks:
            done = task.startswith("[x] ")
            lines.append(f"- [{'x' if done else ' '}] {task.removeprefix('[x] ')}")
        (ws / "PLAN.md").write_text("\n".join(lines) + "\n")
    if use_git:
        ignored = [".loopkit/", "requests/", "BLOCKED.md", "__pycache__/", "loopkit.toml"]
        (ws / ".gitignore").write_text("\n".join(ignored) + "\n")
        git(ws, "init", "-q", "-b", "main")
        git(ws, "add", "-A")
        git(ws, "commit", "-qm", "start", "--allow-empty")


def with_budget(trace: Trace, max_cost: float) -> Trace:
    """The trace with ``[config.stuck] max_cost_usd`` set (the trace's own wins): a budget
    is off by default, and the corpora judge it too."""
    data = json.loads(json.dumps(trace.data))
    data.setdefault("config", {}).setdefault("stuck", {}).setdefault("max_cost_usd", max_cost)
    return Trace(trace.path, data)


def config(trace: Trace, player: list[str]) -> str:
    """loopkit.toml for the trace: its agent, verify and done are ``player`` with the role
    after it; the rest is loopkit's defaults, but for ``pause`` (0) and the trace's
    ``[config]`` (:func:`with_budget`)."""
    tables: dict[str, dict[str, Any]] = {
        "loop": {
            "agent": [*player, "agent"],
            "verify": [*player, "verify"],
            "pause": "0s",
        },
        "stuck": {},
    }
    if trace.tasks:
        tables["loop"]["task_file"] = "PLAN.md"
    if trace.data.get("done"):
        tables["loop"]["done"] = [*player, "done"]
    if any(step.get("agent_ending") == "timeout" for step in trace.steps):
        tables["loop"]["iteration_timeout"] = f"{TIMEOUT:g}s"
    for table, values in trace.data.get("config", {}).items():
        tables.setdefault(table, {}).update(values)
    out = []
    for table, values in tables.items():
        if values:
            out.append(f"[{table}]")
            out.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
            out.append("")
    return "\n".join(out)


# --- one step --------------------------------------------------------------------------


def step_for(trace: Trace, iteration: int) -> dict[str, Any]:
    """The trace's step for ``iteration`` (1-based); past its end, the last one again."""
    steps = trace.steps
    return steps[min(iteration, len(steps)) - 1]


def agent_output(step: dict[str, Any]) -> str:
    """What the agent prints: its output, then Claude's result line when the step names a
    cost (``claude -p --output-format stream-json`` ends so)."""
    text = str(step.get("agent_output", ""))
    cost = step.get("cost_usd")
    if cost is not None and "total_cost_usd" not in text:
        result = {"type": "result", "subtype": "success", "is_error": False,
                  "total_cost_usd": cost}  # fmt: skip
        text = f"{text.rstrip()}\n{json.dumps(result)}\n"
    return text


def apply(trace: Trace, step: dict[str, Any], ws: Path, *, use_git: bool) -> None:
    """The step's diff, written into ``ws`` (commits and commands only in git)."""
    diff = step.get("diff", {})
    for name, text in diff.get("write", {}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(text)
    for name, text in diff.get("append", {}).items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        with (ws / name).open("a") as handle:
            handle.write(text)
    for name in diff.get("touch", []):
        (ws / name).touch()
    for name in diff.get("delete", []):
        (ws / name).unlink(missing_ok=True)
    if step.get("tick") or _ticks_by_task(trace, step):
        plan = ws / "PLAN.md"
        plan.write_text(plan.read_text().replace("- [ ]", "- [x]", 1))
    if use_git:
        for command in diff.get("run", []):
            subprocess.run(command, shell=True, cwd=ws, check=True, capture_output=True,
                           env={**os.environ, **GIT_ENV})  # fmt: skip
        if "commit" in diff:
            git(ws, "add", "-A")
            git(ws, "commit", "-qm", str(diff["commit"]), "--allow-empty")


def _ticks_by_task(trace: Trace, step: dict[str, Any]) -> bool:
    """The first corpus names each step's task: a step ticks its task when the next step's
    is another."""
    if "task" not in step or "plan" in trace.data:
        return False
    steps = trace.steps
    index = next(i for i, s in enumerate(steps) if s is step)
    following = steps[index + 1].get("task") if index + 1 < len(steps) else None
    return following != step.get("task")


def play(role: str, path: Path) -> int:
    """As the loop's ``agent``, ``verify`` or ``done``: the step of ``$LOOPKIT_ITERATION``."""
    trace = load(path)
    iteration = int(os.environ.get("LOOPKIT_ITERATION", "1"))
    step = step_for(trace, iteration)
    ws = Path.cwd()
    if role == "agent":
        apply(trace, step, ws, use_git=(ws / ".git").exists())
        sys.stdout.write(agent_output(step))
        sys.stdout.flush()
        if step.get("agent_ending") == "timeout":
            time.sleep(HANG)
        return int(step.get("agent_exit") or 0)
    if role == "verify":
        sys.stdout.write(str(step.get("verify_output", "")))
        return int(step.get("verify_exit") or 0)
    return 1  # done: never


# --- scoring ---------------------------------------------------------------------------


@dataclass
class Result:
    """What a trace did: each block's iteration and the signals it carried."""

    trace: Trace
    blocks: list[tuple[int, set[str], str | None]] = field(default_factory=list)
    iterations: int = 0

    @property
    def fired(self) -> dict[str, int]:
        """Each signal and the first iteration it fired at."""
        first: dict[str, int] = {}
        for iteration, signals, _ in self.blocks:
            for signal in signals:
                first.setdefault(signal, iteration)
        return first

    @property
    def first_label(self) -> str | None:
        return self.blocks[0][2] if self.blocks else None


def signals_of(trigger: str | None, pending: list[str]) -> set[str]:
    """The signals a block carried: its stuck signals, and ``max_verify_failures`` for the
    supervisor's verify-failures block."""
    found = {name for name in pending if name in SIGNALS}
    if trigger == "verify-failures":
        found.add("max_verify_failures")
    return found


def threshold(signal: str, limits: dict[str, float | None]) -> float | None:
    return VERIFY_LIMIT if signal == "max_verify_failures" else limits.get(signal)


def deadline(result: Result, signal: str, limits: dict[str, float | None]) -> int | None:
    """The last iteration at which ``signal`` still catches the trace in time: within its
    threshold + 1 of the stuck pattern's start (SPEC §25), a budget whenever it is crossed."""
    start, limit = result.trace.stuck_from(signal), threshold(signal, limits)
    if start is None or limit is None:
        return None
    if signal == "max_cost_usd":
        return len(result.trace.steps)
    return start + int(limit)


def caught(result: Result, limits: dict[str, float | None]) -> bool:
    """A stuck trace is caught when its first block comes in time for a signal it expects."""
    if not result.blocks:
        return False
    ends = [deadline(result, s, limits) for s in result.trace.expect]
    ends = [end for end in ends if end is not None]
    return bool(ends) and result.blocks[0][0] <= max(ends)


def in_time(result: Result, signal: str, limits: dict[str, float | None]) -> bool:
    end = deadline(result, signal, limits)
    fired = result.fired.get(signal)
    return fired is not None and end is not None and fired <= end


def table(results: list[Result], limits: dict[str, float | None]) -> str:
    """Per signal: the traces expecting it, its firings, precision (firings on stuck traces
    over all), recall (expecting traces where it fired in time) and iterations to detect
    (from the stuck pattern's start)."""
    rows = ["| signal | threshold | expected in | fired in | precision | recall | iterations "
            "to detect (fired − stuck_from + 1) |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for signal in SIGNALS:
        expecting = [r for r in results if signal in r.trace.expect]
        firing = [r for r in results if signal in r.fired]
        right = [r for r in firing if r.trace.kind == "stuck"]
        timely = [r for r in expecting if in_time(r, signal, limits)]
        precision = f"{len(right) / len(firing):.2f}" if firing else "—"
        recall = f"{len(timely) / len(expecting):.2f}" if expecting else "—"
        detect = sorted(r.fired[signal] - (r.trace.stuck_from(signal) or 1) + 1
                        for r in expecting if signal in r.fired)  # fmt: skip
        shown = ", ".join(str(n) for n in detect) or "—"
        limit = threshold(signal, limits)
        rows.append(f"| `{signal}` | {'off' if limit is None else f'{limit:g}'} | "
                    f"{len(expecting)} | {len(firing)} | {precision} | {recall} "
                    f"| {shown} |")  # fmt: skip
    return "\n".join(rows)


def verdicts(results: list[Result], limits: dict[str, float | None]) -> dict[str, list[str]]:
    """The traces judged wrong: healthy ones flagged, stuck ones not caught in time, first
    questions with the wrong label."""
    flagged = [r.trace.name for r in results if r.trace.kind == "progressing" and r.blocks]
    late = [r.trace.name for r in results if r.trace.kind == "stuck" and not caught(r, limits)]
    mislabelled = [
        r.trace.name for r in results
        if r.trace.kind == "stuck" and r.trace.data.get("label") and r.blocks
        and r.first_label != r.trace.data["label"]
    ]  # fmt: skip
    return {"flagged": flagged, "late": late, "mislabelled": mislabelled}


def per_trace(results: list[Result], limits: dict[str, float | None]) -> str:
    rows = ["| trace | kind | expects | blocks (iteration: signals) | verdict |",
            "|---|---|---|---|---|"]  # fmt: skip
    for r in results:
        blocks = "; ".join(f"{n}: {', '.join(sorted(s)) or '?'}" + (f" [{label}]" if label else "")
                           for n, s, label in r.blocks) or "—"  # fmt: skip
        if r.trace.kind == "progressing":
            verdict = "ok" if not r.blocks else "FLAGGED"
        else:
            verdict = "ok" if caught(r, limits) else "LATE" if r.blocks else "MISSED"
        rows.append(f"| {r.trace.name} | {r.trace.kind} | {', '.join(r.trace.expect) or '—'} "
                    f"| {blocks} | {verdict} |")  # fmt: skip
    return "\n".join(rows)


if __name__ == "__main__":  # python stuck_traces.py TRACE agent|verify|done
    raise SystemExit(play(sys.argv[2], Path(sys.argv[1])))
