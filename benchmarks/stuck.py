"""How often the stuck detector is right (SPEC §19, §25), and what it costs per iteration.

    python benchmarks/stuck.py [--before main] [--corpus traces|sessions] [--verbose]
    python benchmarks/stuck.py --cost [--files 10000] [--rounds 30]

Two corpora of loop traces (:mod:`stuck_traces` says what a trace holds):
``benchmarks/traces/`` (the project's own, SPEC §19) and ``benchmarks/sessions/`` (shaped
like real agent sessions — healthy-but-slow loops and stuck ones, SPEC §25). Every trace is
run through ``loopkit run`` itself: a fresh git repository in a temporary folder holds the
trace's files; ``loopkit.toml`` names :func:`stuck_traces.play` as the agent, verify (and
``done``) — real subprocesses printing the trace's outputs and writing its diffs —; the
configuration is loopkit's default but for ``pause = "0s"``, ``max_cost_usd`` (``--max-cost``,
a budget is off by default) and what a trace sets (a short ``iteration_timeout`` where its
agent hangs). ``loopkit run --exit-on-block --max-iterations N`` runs it; at each block the
question's request says the iteration, its trigger and — from ``state.json`` — the signals
it carried; the harness answers ``A`` (retry: the answered signals count afresh) and runs it
again, until the trace's iterations are done.

A stuck trace is *caught* when its first block comes by ``stuck_from + threshold`` of a
signal it expects (its threshold + 1); a progressing trace is *flagged* by any block. Per
signal: precision (firings on stuck traces / all firings), recall (traces expecting it where
it fired in time), iterations to detect (fired − stuck_from + 1). ``--before REV`` runs the
same corpora on the code at ``REV`` (``git archive``; e.g. ``main``) first, and prints both.

Cost (``--cost``): a git repository of ``--files`` files is built; an iteration is the
detector's work on it — the task's reach (:class:`loopkit.supervisor.reach.Reach`) and one
``observe`` with a 4 kB output — timed over ``--rounds`` iterations in which the agent
changed one file, against ``git status --porcelain`` alone in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for folder in (ROOT, HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))  # the checkout's loopkit, and stuck_traces

import stuck_traces  # noqa: E402
from stuck_traces import Result, Trace  # noqa: E402

from loopkit.config import StuckConfig  # noqa: E402
from loopkit.datarecord import replace  # noqa: E402
from loopkit.supervisor import stuck, stuck_counters  # noqa: E402
from loopkit.supervisor.reach import Reach  # noqa: E402

CORPORA = {"traces": HERE / "traces", "sessions": HERE / "sessions"}
PLAYER = [sys.executable, str(HERE / "stuck_traces.py")]


def loopkit(code: Path, ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(PYTHONPATH=str(code), LOOPKIT_HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "loopkit", "-C", str(ws), *args]
    return subprocess.run(command, cwd=ws, env=env, capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip


def state_of(ws: Path) -> dict[str, object]:
    try:
        data = json.loads((ws / ".loopkit" / "state.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def run_trace(trace: Trace, code: Path, work: Path, max_cost: float) -> Result:
    """``trace`` through ``loopkit run`` of the loopkit at ``code``."""
    ws, home = work / trace.name / "ws", work / trace.name / "home"
    stuck_traces.set_up(trace, ws, use_git=True)
    player = [*PLAYER, str(trace.path)]
    (ws / "loopkit.toml").write_text(stuck_traces.config(stuck_traces.with_budget(trace, max_cost),
                                                         player))  # fmt: skip
    result = Result(trace)
    total = len(trace.steps)
    for _ in range(total + 1):
        done = int(state_of(ws).get("iteration") or 0)  # type: ignore[call-overload]
        if done >= total:
            break
        ran = loopkit(code, ws, home, "run", "--exit-on-block", "--max-iterations",
                      str(total - done))  # fmt: skip
        if ran.returncode == 0:
            break
        if ran.returncode != 2:
            raise SystemExit(f"stuck.py: {trace.name}: loopkit run exited {ran.returncode}: "
                             f"{ran.stderr[-800:]}")  # fmt: skip
        state = state_of(ws)
        request_id = str(state.get("open_request") or "")
        record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
        pending = (state.get("stuck") or {}).get("pending", [])  # type: ignore[union-attr]
        signals = stuck_traces.signals_of(record.get("trigger"), list(pending))
        label = stuck_traces.LABELS.get(str(record.get("trigger")))
        result.blocks.append((int(record.get("iteration") or 0), signals, label))
        answered = loopkit(code, ws, home, "reply", "--request-id", request_id, "--reply", "A")
        if answered.returncode != 0:
            raise SystemExit(f"stuck.py: {trace.name}: reply failed: {answered.stderr[-500:]}")
    result.iterations = int(state_of(ws).get("iteration") or 0)  # type: ignore[call-overload]
    return result


def run_corpus(traces: list[Trace], code: Path, max_cost: float, jobs: int) -> list[Result]:
    with (
        tempfile.TemporaryDirectory(prefix="loopkit-stuck-") as work,
        ThreadPoolExecutor(max_workers=jobs) as pool,
    ):
        return list(pool.map(lambda t: run_trace(t, code, Path(work), max_cost), traces))


def summary(results: list[Result], limits: dict[str, float | None]) -> dict[str, str]:
    healthy = [r for r in results if r.trace.kind == "progressing"]
    stuck_ones = [r for r in results if r.trace.kind == "stuck"]
    judged = stuck_traces.verdicts(results, limits)
    labelled = [r for r in stuck_ones if r.trace.data.get("label")]
    return {
        "healthy traces flagged": f"{len(judged['flagged'])} of {len(healthy)}",
        "stuck traces caught within threshold + 1": (
            f"{len(stuck_ones) - len(judged['late'])} of {len(stuck_ones)}"
        ),
        "first question with the right label": (
            f"{len(labelled) - len(judged['mislabelled'])} of {len(labelled)}"
        ),
    }


def report(name: str, runs: dict[str, list[Result]], limits: dict[str, float | None],
           verbose: bool) -> bool:  # fmt: skip
    """Print one corpus' figures (before and after, when both ran); True when all is right."""
    after = runs["after"]
    healthy = sum(r.trace.kind == "progressing" for r in after)
    print(f"\n## {name}: {len(after)} traces ({healthy} progressing, {len(after) - healthy} "
          "stuck), through `loopkit run`\n")  # fmt: skip
    columns = list(runs)
    print("| | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns))
    sums = {column: summary(results, limits) for column, results in runs.items()}
    for key in sums["after"]:
        print(f"| {key} | " + " | ".join(sums[c][key] for c in columns) + " |")
    for column, results in runs.items():
        print(f"\n{column}:\n\n{stuck_traces.table(results, limits)}")
        judged = stuck_traces.verdicts(results, limits)
        for what, names in judged.items():
            if names:
                print(f"\n{what}: {', '.join(names)}")
        if verbose:
            print("\n" + stuck_traces.per_trace(results, limits))
    judged = stuck_traces.verdicts(after, limits)
    return not any(judged.values())


def run_replay(args: argparse.Namespace) -> int:
    limits: dict[str, float | None] = dict(
        stuck_counters.thresholds(replace(StuckConfig(), max_cost_usd=args.max_cost))
    )
    chosen = [args.corpus] if args.corpus else list(CORPORA)
    codes = {"after": ROOT}
    with tempfile.TemporaryDirectory(prefix="loopkit-before-") as before:
        if args.before:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "loopkit"],
                                     capture_output=True, check=True).stdout  # fmt: skip
            subprocess.run(["tar", "-x", "-C", before], input=archive, check=True)
            codes = {f"before ({args.before})": Path(before), "after": ROOT}
        print(f"[stuck] defaults, [loop] max_verify_failures = {stuck_traces.VERIFY_LIMIT}, "
              f"max_cost_usd = {args.max_cost:g}; pause = 0s")  # fmt: skip
        right = True
        for name in chosen:
            traces = stuck_traces.traces(CORPORA[name])
            started = time.monotonic()
            runs = {column: run_corpus(traces, code, args.max_cost, args.jobs)
                    for column, code in codes.items()}  # fmt: skip
            right = report(name, runs, limits, args.verbose) and right
            print(f"\n({time.monotonic() - started:.0f} s)")
    return 0 if right else 1


def run_cost(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="loopkit-stuck-cost-") as work:
        repo = Path(work) / "repo"
        repo.mkdir()
        stuck_traces.git(repo, "init", "-q")
        for n in range(args.files):
            folder = repo / f"pkg{n // 100:03d}"
            folder.mkdir(exist_ok=True)
            (folder / f"module{n:05d}.py").write_text(f"VALUE_{n} = {n}\n" * 20)
        stuck_traces.git(repo, "add", "-A")
        stuck_traces.git(repo, "commit", "-qm", "10k files")
        subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                       check=True)  # fmt: skip
        reach = Reach(repo)
        reach.start()
        detector = stuck.Detector(StuckConfig(), stuck_counters.Counters())
        output = ("I updated the module and re-ran the tests; everything passes. " * 64)[:4096]
        ours: list[float] = []
        base: list[float] = []
        for n in range(args.rounds):
            target = repo / f"pkg{(n * 37) % (args.files // 100):03d}" / f"module{n:05d}.py"
            target.write_text(f"CHANGED = {n}\nVALUE = 'changed in round {n}'\n")
            started = time.perf_counter()
            subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                           check=True)  # fmt: skip
            base.append(time.perf_counter() - started)
            started = time.perf_counter()
            ground = reach.take()
            seen = stuck.Observation(n + 1, None, reached=ground.new, head=ground.head,
                                     agent_output=output + str(n), verify_exit=0)  # fmt: skip
            detector.observe(seen)
            ours.append(time.perf_counter() - started)

    def ms(values: list[float], q: float) -> str:
        ordered = sorted(values)
        return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"

    print(f"git repository of {args.files} files, {args.rounds} iterations, one file changed "
          "per iteration\n")  # fmt: skip
    print("| per iteration | median ms | p95 ms |\n|---|---|---|")
    print(f"| stuck detector (reach + observe) | {statistics.median(ours) * 1000:.1f} "
          f"| {ms(ours, 0.95)} |")  # fmt: skip
    print(f"| baseline: `git status --porcelain` alone | {statistics.median(base) * 1000:.1f} "
          f"| {ms(base, 0.95)} |")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), help="one corpus (default: both)")
    parser.add_argument("--before", metavar="REV", help="also run the code at REV (e.g. main)")
    parser.add_argument("--max-cost", type=float, default=2.0)
    parser.add_argument("--jobs", type=int, default=1, help="traces run at once")
    parser.add_argument("--verbose", action="store_true", help="a row per trace too")
    parser.add_argument("--cost", action="store_true", help="time the detector on a big repo")
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)
    return run_cost(args) if args.cost else run_replay(args)


if __name__ == "__main__":
    raise SystemExit(main())
