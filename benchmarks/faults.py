#!/usr/bin/env python3
"""The fault-injection run, long: kill -9 of ``escalate`` and of ``run`` at random points,
a restart, and a count of what was lost, doubled or torn. Prints one markdown table.

    python benchmarks/faults.py [--rounds 30] [--baseline /path/to/old/.venv/bin/loopkit]

``--baseline`` runs the same kills (same seed, same delays) against another loopkit — an
older checkout installed in its own virtualenv — so both rows come from one run on one
machine. The scenarios and the counting are the test suite's (``tests/faults/chaos.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "faults")]

from chaos import fault_run  # noqa: E402  (the suite's fault-injection run)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="kills of each kind")
    parser.add_argument("--baseline", help="another loopkit executable to run the same kills on")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rows = [("this checkout", str(Path(sys.executable).parent / "loopkit"))]
    if args.baseline:
        rows.insert(0, ("baseline", args.baseline))
    print("| loopkit | killed | kills | lost | doubled | torn |")
    print("|---|---|---:|---:|---:|---:|")
    for name, exe in rows:
        for kind, tally in fault_run(exe, args.rounds, args.seed).items():
            counts = (tally.kills, tally.lost, tally.doubled, tally.torn)
            print(f"| {name} | {kind} | " + " | ".join(map(str, counts)) + " |")
            for note in tally.notes[:3]:
                print(f"|  |  | {note} | | | |", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
