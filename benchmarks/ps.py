"""``loopkit ps`` over 50 registered loops, against ``python -c pass`` in the same run (SPEC §22).

    python benchmarks/ps.py [--loops 50] [--runs 20]

A temporary ``LOOPKIT_HOME`` registers ``--loops`` workspaces, each with a ``loopkit.toml``
and the files a loop leaves: a quarter blocked (``BLOCKED.md`` and its request), a quarter
paused with a note waiting, a quarter "running" under a pid that is gone (dead), the rest
finished. ``ps`` and ``ps --json`` run ``--runs`` times each (plus one warm-up, dropped),
interleaved with ``python -c pass`` and ``loopkit --help`` (start-up alone: what ``ps``
itself costs is the difference); every run must list every loop. The figure is the
median wall time of the process, as installed, and its median CPU time (user + system:
what a shared, loaded machine does not inflate). Target: ≤ 200 ms for 50 loops. Standard
library only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import find_loopkit, interpreter_of

TARGET_MS = 200.0


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)


def make_loops(root: Path, count: int) -> Path:
    """``count`` registered workspaces under ``root``; returns the LOOPKIT_HOME."""
    home = root / "home"
    for n in range(count):
        ws = root / f"loop-{n:02d}"
        _write(ws / "loopkit.toml", '[loop]\nagent = "true"\nverify = "true"\n')
        kind = n % 4
        state = {"status": "finished", "pid": 1, "iteration": 12 + n, "task": f"task {n}",
                 "updated_at": "2026-12-03T10:00:00.000Z", "started_at": "2026-12-03T09:00:00Z",
                 "last_verify": {"ok": True, "line": "12 passed", "at": "2026-12-03T10:00:00Z"},
                 "total_cost_usd": 0.5 + n}  # fmt: skip
        if kind == 0:
            rid = f"req{n:04d}"
            state.update(status="blocked", open_request=rid)
            _write(ws / "BLOCKED.md", f"# Blocked\n<!-- loopkit request: {rid} -->\n")
            _write(ws / "requests" / f"{rid}.json", {"request_id": rid, "prompt": "Which flow?",
                   "created_at": "2026-12-03T10:00:00Z"})  # fmt: skip
        elif kind == 1:
            state.update(status="paused", pid=os.getpid())
            _write(
                ws / ".loopkit" / "control" / "steer.json",
                {"command": "pause", "by": "me", "via": "cli", "at": "2026-12-03T10:00:00Z"},
            )
            _write(
                ws / ".loopkit" / "control" / "notes" / "00000000000000000001-aa.json",
                {"text": "use staging", "by": "me", "via": "cli", "at": "2026-12-03T10:00:00Z"},
            )
        elif kind == 2:
            state.update(status="running", pid=2**22 + 1, pid_start=1)  # gone: dead
        _write(ws / ".loopkit" / "state.json", state)
        _write(
            home / "workspaces" / f"{n:016x}.json",
            {"path": str(ws), "repo": ws.name, "last_seen": f"2026-12-03T10:00:{n:02d}Z"},
        )
    return home


def timed(argv: list[str], env: dict[str, str], expect_rows: int | None) -> tuple[float, float]:
    """Wall and CPU (user + system) milliseconds of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    elapsed = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    if expect_rows is not None and len(json.loads(done.stdout)) != expect_rows:
        raise SystemExit(f"{' '.join(argv)} did not list {expect_rows} loops")
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    exe = find_loopkit()
    python = interpreter_of(exe)
    with tempfile.TemporaryDirectory(prefix="loopkit-ps-") as tmp:
        home = make_loops(Path(tmp), args.loops)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["LOOPKIT_HOME"] = str(home)
        names = ("python -c pass", "loopkit --help", "ps", "ps --json")
        times: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        for run in range(args.runs + 1):
            rows = [
                ("python -c pass", [python, "-c", "pass"], None),
                ("loopkit --help", [exe, "--help"], None),  # start-up alone, loops read none
                ("ps", [exe, "ps"], None),
                ("ps --json", [exe, "ps", "--json"], args.loops),
            ]
            for name, argv, expect in rows:
                elapsed, cpu = timed(argv, env, expect)
                if run:  # the first round warms the caches: dropped
                    times[name].append(elapsed)
                    cpus[name].append(cpu)
    base = statistics.median(times["python -c pass"])
    print(f"loopkit ps over {args.loops} registered loops, median of {args.runs} runs")
    print(f"{'command':<16} {'median ms':>10} {'× python':>9} {'CPU ms':>8}  target")
    failed = False
    for name, values in times.items():
        median = statistics.median(values)
        timed_here = name.startswith("ps")
        target = f"≤ {TARGET_MS:.0f} ms" if timed_here else "(baseline)"
        ok = not timed_here or median <= TARGET_MS
        failed |= not ok
        cpu = statistics.median(cpus[name])
        miss = "" if ok else "  MISSED"
        print(f"{name:<16} {median:>10.1f} {median / base:>9.2f} {cpu:>8.1f}  {target}{miss}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
