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

    def __init__(self, name: str, exe: str, root: Path) -> None:
        self.name, self.exe = name, exe
        self.ws, self.home = root / name / "ws", root / name / "home"
        self.ws.mkdir(parents=True)
        self.home.mkdir()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["LOOPKIT_HOME"] = str(self.home)
        self.times: dict[str, list[float]] = {command: [] for command in ORDER}
        self.call([self.exe, "-C", str(self.ws), "init", "--agent", "true"], 0)

    def call(self, argv: list[str], expect: int) -> float:
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=self.ws, env=self.env, capture_output=True, timeout=60)
        elapsed = (time.perf_counter() - t0) * 1000
        if done.returncode != expect:
            err = done.stderr.decode(errors="replace").strip()
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}, not {expect}: {err}")
        return elapsed

    def time(self, command: str, args: list[str], expect: int = 0) -> None:
        self.times[command].append(self.call([self.exe, "-C", str(self.ws), *args], expect))

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="timed runs per command (≥ 1)")
    ap.add_argument("--baseline", help="another checkout's loopkit, measured in the same run")
    args = ap.parse_args()
    loopkit = find_loopkit()
    interpreter = interpreter_of(loopkit)
    exes = [("loopkit", loopkit)] + ([("baseline", args.baseline)] if args.baseline else [])
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
