"""The confirmation window alone: BLOCKED.md removed → ``wait_unblock`` says "gone".

In process, on a real inotify watch, with no agent, no supervisor and no cgroup: what is left
of row (a) of ``run.py`` when everything but the wait is taken away. ``rm BLOCKED.md`` waits
out the full window (8 ms); ``mv`` out of the folder the short one (2 ms), since the watch
pairs a rename's events by their cookie (SPEC §20).

    .venv/bin/python benchmarks/unblock_window.py --rounds 30
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from loopkit.watch.folder import FolderWatch
from loopkit.watch.waits import wait_unblock
from loopkit.watch.wake import Wake


def one(ws: Path, away: Path, method: str, n: int) -> float:
    block = ws / "BLOCKED.md"
    block.write_text("# Blocked\n")
    wake, stop = Wake(), threading.Event()
    done: list[tuple[str, float]] = []
    try:
        with FolderWatch([ws], wake) as watch:

            def wait() -> None:
                outcome = wait_unblock(block, watch, wake, stop, deadline=None)
                done.append((outcome, time.perf_counter()))

            waiter = threading.Thread(target=wait)
            waiter.start()
            time.sleep(0.05)  # let it settle into its wait (a benchmark, not a test)
            start = time.perf_counter()
            if method == "rm":
                block.unlink()
            else:
                os.rename(block, away / f"BLOCKED.{n}.md")
            waiter.join(10)
    finally:
        wake.close()
    [(outcome, end)] = done
    assert outcome == "gone", outcome
    return (end - start) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30, help="rounds per method (≥ 1)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be ≥ 1")
    root = Path(tempfile.mkdtemp(prefix="loopkit-window-"))
    try:
        ws, away = root / "ws", root / "away"
        ws.mkdir()
        away.mkdir()
        for method, label in (("rm", "rm BLOCKED.md"), ("mv", "mv out of the folder")):
            times = sorted(one(ws, away, method, n) for n in range(args.rounds))
            p95 = times[max(0, round(0.95 * len(times)) - 1)]
            print(f"{label}: p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
