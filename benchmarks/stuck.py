"""How often the stuck detector is right (SPEC section 19), and what it costs per iteration.

    python benchmarks/stuck.py [--traces DIR] [--max-cost 2.0] [--verbose]
    python benchmarks/stuck.py --cost [--files 10000] [--rounds 30]

Replay: each trace in ``benchmarks/traces/*.toml`` is played into a fresh git repository
in a temporary folder — its ``[files]`` committed, then per iteration the agent's diff
applied (``write`` files, ``touch`` them, ``delete`` them, ``commit``) — and the real
detector (:class:`loopkit.supervisor.stuck.Detector`, the default ``[stuck]`` thresholds,
``max_cost_usd`` = ``--max-cost``) is handed what the supervisor hands it: the workspace
digest (:class:`loopkit.supervisor.snapshot.Snapshots`, the real ``git status``), the
agent's output, exit and ending, the cost read from its Claude result
(:func:`loopkit.supervisor.spend.claude_run`, else the trace's ``cost_usd``), verify's output
and exit. The first iteration each signal fires at is recorded; nothing is reset.

A trace names the signals it ``expect`` s (none for a progressing loop) and ``stuck_from``,
the first iteration of its stuck pattern (or one per signal, a table). A signal is *caught
in time* when it fires no later than ``stuck_from + threshold - 1`` (for
``repeated_output``, ``stuck_from`` is the first near-copy). Per signal: precision =
firings in traces that expect it / all its firings; recall = traces that expect it where it
was caught in time / traces that expect it.

Cost (``--cost``): a git repository of ``--files`` files (in folders of 100, committed) is
built in a temporary folder; an iteration is the detector's work on it — one workspace
digest and one ``observe`` with a 4 kB output — timed over ``--rounds`` iterations in which
the agent changed one file, against a baseline in the same run: ``git status --porcelain``
alone. Prints median and p95 in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the checkout's loopkit, also when run without installing

from loopkit.config import StuckConfig  # noqa: E402
from loopkit.datarecord import replace  # noqa: E402
from loopkit.supervisor import stuck  # noqa: E402
from loopkit.supervisor.snapshot import Snapshots  # noqa: E402
from loopkit.supervisor.spend import claude_run  # noqa: E402

TRACES = Path(__file__).resolve().parent / "traces"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.com",
}
SIGNALS = (stuck.NO_PROGRESS, stuck.SAME_ERROR, stuck.REPEATED_OUTPUT, stuck.CRASH_LOOP,
           stuck.COST)  # fmt: skip


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})  # fmt: skip


@dataclass
class Replayed:
    name: str
    kind: str
    expect: list[str]
    stuck_from: int | dict[str, int] | None
    fired: dict[str, int] = field(default_factory=dict)  # signal → first iteration
    iterations: int = 0


def replay(path: Path, settings: StuckConfig, work: Path, *, use_git: bool = True) -> Replayed:
    """Play one trace into ``work``; ``use_git=False``: a plain folder (no commits, the tree's
    digest), for a quick check of the corpus in the test suite."""
    trace = tomllib.loads(path.read_text())
    result = Replayed(path.stem, trace["kind"], list(trace.get("expect", [])),
                      trace.get("stuck_from"))  # fmt: skip
    repo = work / path.stem
    repo.mkdir()
    for name, text in trace.get("files", {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    if use_git:
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "start", "--allow-empty")
    snapshots = Snapshots(repo, excluded=("BLOCKED.md",), git="git" if use_git else None)
    detector = stuck.Detector(settings, stuck.Counters(last_state=snapshots.take().digest))
    for number, step in enumerate(trace["iteration"], 1):
        diff = step.get("diff", {})
        for name, text in diff.get("write", {}).items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        for name in diff.get("touch", []):
            (repo / name).touch()
        for name in diff.get("delete", []):
            (repo / name).unlink()
        if "commit" in diff and use_git:
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", diff["commit"], "--allow-empty")
        taken = snapshots.take()
        output = step.get("agent_output", "")
        claude = claude_run(output)
        seen = stuck.Observation(
            iteration=number,
            task=step.get("task"),
            after=taken.digest,
            head=taken.head,
            agent_ending=step.get("agent_ending", "exited"),
            agent_exit=step.get("agent_exit"),
            agent_output=output,
            verify_exit=step.get("verify_exit"),
            verify_output=step.get("verify_output", ""),
            cost_usd=claude.cost_usd if claude.cost_usd is not None else step.get("cost_usd"),
            outage=claude.outage,
        )
        for signal in detector.observe(seen):
            result.fired.setdefault(signal.trigger, number)
        result.iterations = number
    return result


def deadline(trace: Replayed, signal: str, limits: dict[str, float | None]) -> int | None:
    """The last iteration at which ``signal`` still catches ``trace`` in time."""
    limit = limits.get(signal)
    start = trace.stuck_from
    if isinstance(start, dict):
        start = start.get(signal)
    if start is None or limit is None:
        return None
    if signal == stuck.COST:
        return trace.iterations  # a budget: caught when it is crossed, whenever that is
    return start + int(limit) - 1


def in_time(trace: Replayed, signal: str, limits: dict[str, float | None]) -> bool:
    last = deadline(trace, signal, limits)
    return signal in trace.fired and last is not None and trace.fired[signal] <= last


def table(results: list[Replayed], limits: dict[str, float | None]) -> str:
    rows = ["| signal | threshold | traces expecting it | fired | precision | recall "
            "(caught in time) | fired at (iteration / latest in time) |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for signal in SIGNALS:
        expecting = [r for r in results if signal in r.expect]
        firing = [r for r in results if signal in r.fired]
        right = [r for r in firing if signal in r.expect]
        caught = [r for r in expecting if in_time(r, signal, limits)]
        precision = f"{len(right) / len(firing):.2f}" if firing else "—"
        recall = f"{len(caught) / len(expecting):.2f}" if expecting else "—"
        at = ", ".join(f"{r.fired[signal]}/{deadline(r, signal, limits)}" for r in expecting
                       if signal in r.fired) or "—"  # fmt: skip
        limit = limits[signal]
        shown = "off" if limit is None else f"{limit:g}"
        rows.append(f"| `{signal}` | {shown} | {len(expecting)} | {len(firing)} | {precision} "
                    f"| {recall} | {at} |")  # fmt: skip
    return "\n".join(rows)


def per_trace(results: list[Replayed]) -> str:
    rows = [
        "| trace | kind | expects | fired (signal@iteration) | verdict |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        fired = ", ".join(f"{s}@{n}" for s, n in sorted(r.fired.items(), key=lambda x: x[1]))
        if r.kind == "progressing":
            verdict = "ok" if not r.fired else "FALSE ALARM"
        else:
            missing = [s for s in r.expect if s not in r.fired]
            extra = [s for s in r.fired if s not in r.expect]
            verdict = (
                "ok"
                if not missing and not extra
                else (f"missed {', '.join(missing)}" if missing else f"also {', '.join(extra)}")
            )
        rows.append(f"| {r.name} | {r.kind} | {', '.join(r.expect) or '—'} | {fired or '—'} "
                    f"| {verdict} |")  # fmt: skip
    return "\n".join(rows)


def run_replay(args: argparse.Namespace) -> int:
    settings = replace(StuckConfig(), max_cost_usd=args.max_cost)
    limits: dict[str, float | None] = dict(stuck.thresholds(settings))
    paths = sorted(Path(args.traces).glob("*.toml"))
    if not paths:
        raise SystemExit(f"stuck.py: no traces in {args.traces}")
    with tempfile.TemporaryDirectory(prefix="loopkit-stuck-") as work:
        results = [replay(path, settings, Path(work)) for path in paths]
    progressing = [r for r in results if r.kind == "progressing"]
    stuck_ones = [r for r in results if r.kind == "stuck"]
    print(f"{len(results)} traces: {len(progressing)} progressing, {len(stuck_ones)} stuck; "
          f"[stuck] defaults, max_cost_usd = {args.max_cost:g}\n")  # fmt: skip
    print(table(results, limits))
    flagged = [r.name for r in progressing if r.fired]
    late = [r.name for r in stuck_ones if not all(in_time(r, s, limits) for s in r.expect)]
    print(f"\nprogressing traces flagged: {len(flagged)} of {len(progressing)}"
          + (f" ({', '.join(flagged)})" if flagged else ""))  # fmt: skip
    print(f"stuck traces not caught in time: {len(late)} of {len(stuck_ones)}"
          + (f" ({', '.join(late)})" if late else ""))  # fmt: skip
    if args.verbose:
        print("\n" + per_trace(results))
    return 1 if flagged or late else 0


def run_cost(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="loopkit-stuck-cost-") as work:
        repo = Path(work) / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        for n in range(args.files):
            folder = repo / f"pkg{n // 100:03d}"
            folder.mkdir(exist_ok=True)
            (folder / f"module{n:05d}.py").write_text(f"VALUE_{n} = {n}\n" * 20)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "10k files")
        git(repo, "status", "--porcelain")  # git's stat cache filled, as after any git use
        snapshots = Snapshots(repo)
        detector = stuck.Detector(StuckConfig(), stuck.Counters(last_state=snapshots.take().digest))
        output = ("I updated the module and re-ran the tests; everything passes. " * 64)[:4096]
        ours: list[float] = []
        base: list[float] = []
        for n in range(args.rounds):
            target = repo / f"pkg{(n * 37) % (args.files // 100):03d}" / f"module{n:05d}.py"
            target.write_text(f"CHANGED = {n}\n")
            started = time.perf_counter()
            subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                           check=True)  # fmt: skip
            base.append(time.perf_counter() - started)
            started = time.perf_counter()
            taken = snapshots.take()
            seen = stuck.Observation(n + 1, None, taken.digest, taken.head,
                                     agent_output=output + str(n), verify_exit=0)  # fmt: skip
            detector.observe(seen)
            ours.append(time.perf_counter() - started)

    def ms(values: list[float], q: float) -> str:
        ordered = sorted(values)
        return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"

    print(f"git repository of {args.files} files, {args.rounds} iterations, one file changed "
          "per iteration\n")  # fmt: skip
    print("| per iteration | median ms | p95 ms |\n|---|---|---|")
    print(f"| stuck detector (digest + observe) | {statistics.median(ours) * 1000:.1f} "
          f"| {ms(ours, 0.95)} |")  # fmt: skip
    print(f"| baseline: `git status --porcelain` alone | {statistics.median(base) * 1000:.1f} "
          f"| {ms(base, 0.95)} |")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default=str(TRACES))
    parser.add_argument("--max-cost", type=float, default=2.0)
    parser.add_argument("--verbose", action="store_true", help="a row per trace too")
    parser.add_argument("--cost", action="store_true", help="time the detector on a big repo")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    return run_cost(args) if args.cost else run_replay(args)


if __name__ == "__main__":
    raise SystemExit(main())
