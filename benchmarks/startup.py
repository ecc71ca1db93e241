"""Start-up of every everyday command against ``python -c pass``, in the same run (SPEC §20).

    python benchmarks/startup.py [--runs 30] [--baseline OTHER/bin/loopkit]

Each command runs ``--runs`` times (plus one warm-up, dropped), interleaved with ``python -c
pass`` and with the baseline's same command, so drift on a shared machine hits all alike. A
round, in a workspace ``loopkit init`` made: ``escalate`` (a new block), ``reply`` to it,
``unblock``, then ``status``, ``requests``, ``inbox``, ``ask`` (a question written) and
``--help``. Every command must exit as it should, or the script stops. The figure is the
median wall time of the process, as installed (bytecode cached). Standard library only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from run import find_loopkit, interpreter_of

TARGET = 4.0  # × python -c pass, for every command here
POLICY = "Escalate anything irreversible; proceed on routine refactors."
ESCALATE = ["escalate", "-q", "Which flow?", "-c", "checkout", "-a", "read PROMPT.md",
            "--choice", "Flow A — old API", "--choice", "Flow B — migration"]  # fmt: skip
ASK = ["ask", "-s", "The helper's name is unclear.", "-p", POLICY, "-q", "Rename the helper?"]
ORDER = ("status", "reply", "unblock", "requests", "inbox", "escalate", "ask", "--help")


class Side:
    """One loopkit under test: its executable, its workspace and its LOOPKIT_HOME."""

    def __init__(self, name: str, exe: str, root: Path, wrap: list[str] | None = None) -> None:
        self.name, self.exe, self.wrap = name, exe, wrap or []
        self.stderr = ""
        self.counts: dict[str, float] = {}  # with a valgrind ``wrap``: millions of instructions
        self.ws, self.home = root / name / "ws", root / name / "home"
        self.ws.mkdir(parents=True)
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["LOOPKIT_HOME"] = str(self.home)
        self.times: dict[str, list[float]] = {command: [] for command in ORDER}
        self.call([self.exe, "-C", str(self.ws), "init", "--agent", "true"], 0)

    def call(self, argv: list[str], expect: int) -> float:
        argv = [*self.wrap, *argv] if argv[0] == self.exe else argv
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=self.ws, env=self.env, capture_output=True, timeout=300)
        elapsed = (time.perf_counter() - t0) * 1000
        self.stderr = done.stderr.decode(errors="replace")
        if done.returncode != expect:
            err = done.stderr.decode(errors="replace").strip()
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}, not {expect}: {err}")
        return elapsed

    def time(self, command: str, args: list[str], expect: int = 0) -> None:
        self.times[command].append(self.call([self.exe, "-C", str(self.ws), *args], expect))
        if self.wrap:
            self.counts[command] = _instructions(self.stderr)

    def newest_request(self) -> str:
        return max((self.ws / "requests").glob("*.json"), key=lambda p: p.stat().st_mtime).stem


def round_of(sides: list[Side], python: list[float], interpreter: str) -> None:
    t0 = time.perf_counter()
    subprocess.run([interpreter, "-c", "pass"], check=True, timeout=60)
    python.append((time.perf_counter() - t0) * 1000)
    for side in sides:
        side.time("escalate", ESCALATE, expect=2)
    for side in sides:
        side.time("reply", ["reply", "--request-id", side.newest_request(), "--reply", "A"])
    for side in sides:
        side.time("unblock", ["unblock"])
    for command, args in (("status", ["status"]), ("requests", ["requests"]),
                          ("inbox", ["inbox"]), ("ask", ASK), ("--help", ["--help"])):  # fmt: skip
        for side in sides:
            side.time(command, args)


def measure(
    exes: list[tuple[str, str]], interpreter: str, runs: int
) -> tuple[float, dict[str, dict[str, float]]]:
    """``python -c pass``'s median, and each loopkit's median per command of :data:`ORDER`
    (``exes``: name → executable; the first is the one under test), all in one run."""
    root = Path(tempfile.mkdtemp(prefix="loopkit-startup-"))
    try:
        sides = [Side(name, exe, root) for name, exe in exes]
        python: list[float] = []
        for _ in range(runs + 1):
            round_of(sides, python, interpreter)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    medians = {
        side.name: {command: statistics.median(side.times[command][1:]) for command in ORDER}
        for side in sides
    }
    return statistics.median(python[1:]), medians


CACHEGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def _instructions(stderr: str) -> float:
    """Millions of instructions, from cachegrind's ``I refs:`` line."""
    for line in stderr.splitlines():
        if "I refs:" in line or "I   refs:" in line:
            return int(line.rsplit(":", 1)[1].replace(",", "")) / 1e6
    raise SystemExit(f"no instruction count in valgrind's output: {stderr[-300:]}")


def instructions(exes: list[tuple[str, str]], interpreter: str) -> dict[str, dict[str, float]]:
    """Instructions executed (millions) by ``python -c pass`` and by each command of one round
    under valgrind's cachegrind: a figure the machine's load does not move."""
    root = Path(tempfile.mkdtemp(prefix="loopkit-startup-"))
    counts: dict[str, dict[str, float]] = {}
    try:
        for name, exe in exes:
            side = Side(name, exe, root, wrap=[*CACHEGRIND, interpreter_of(exe)])
            round_of([side], [], interpreter)
            done = subprocess.run([*CACHEGRIND, interpreter, "-c", "pass"], capture_output=True)
            side.counts["python -c pass"] = _instructions(done.stderr.decode(errors="replace"))
            counts[name] = side.counts
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="timed runs per command (≥ 1)")
    ap.add_argument("--baseline", help="another checkout's loopkit, measured in the same run")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under valgrind, not time (load-proof)")  # fmt: skip
    args = ap.parse_args()
    loopkit = find_loopkit()
    interpreter = interpreter_of(loopkit)
    exes = [("loopkit", loopkit)] + ([("baseline", args.baseline)] if args.baseline else [])
    if args.instructions:
        counts = instructions(exes, interpreter)
        heads = " | ".join(f"{name} (M instructions) | ×python" for name, _ in exes)
        print(f"| command | {heads} |")
        print("|---" * (1 + 2 * len(exes)) + "|")
        for command in ("python -c pass", *ORDER):
            cells = []
            for name, _ in exes:
                n, py = counts[name][command], counts[name]["python -c pass"]
                cells.append(f"{n:.0f} | {n / py:.1f}×")
            print(f"| `{command}` | " + " | ".join(cells) + " |")
        return 0
    py, medians = measure(exes, interpreter, args.runs)
    print(f"`python -c pass`: {py:.1f} ms (median of {args.runs}, {interpreter})\n")
    head = "| command | loopkit | ×python | verdict (≤ 4×) |"
    if args.baseline:
        head += " baseline | ×python |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for command in ORDER:
        cells = []
        for name, _ in exes:
            ms = medians[name][command]
            cells.append(f"{ms:.1f} ms | {ms / py:.1f}×")
            if name == "loopkit":
                cells.append("pass" if ms <= TARGET * py else "**miss**")
        print(f"| `loopkit {command}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
