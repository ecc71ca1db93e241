#!/usr/bin/env python3
"""How long after a dead channel comes back is the human told? Prints one markdown table.

    python benchmarks/redelivery.py [--rounds 5] [--backoff 1s] [--failures 2]

A fake Slack webhook on 127.0.0.1 answers 500 to the first ``--failures`` sends (each send
tries twice within its budget, so that is ``2 × failures`` HTTP 500s), then is "repaired"
and answers 200. A ``loopkit run`` daemon waits on a block raised by its agent and retries
by its schedule (``retry_backoff``, doubled per failed send). Measured: repair → the 200,
beside the baseline of the same run — the schedule's own next attempt after the repair (read
from the request's ``delivery`` list), which no retrying process could beat without sending
more often — and how late the attempt came against its schedule. Standard library only; every
process is killed before the script exits. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import wait_for

LOOPKIT = Path(sys.executable).parent / "loopkit"
DEADLINE = 60.0


class Hook:
    """The webhook: 500 until ``repair()``, then 200; remembers when each POST came."""

    def __init__(self, failures: int) -> None:
        self.fail_left = failures * 2  # a send tries twice within its budget
        self.posts: list[tuple[float, int]] = []
        self.lock = threading.Lock()
        self.repaired_at: float | None = None
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with hook.lock:
                    status = 500 if hook.repaired_at is None else 200
                    hook.posts.append((time.monotonic(), status))
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hook"

    def failed(self) -> int:
        with self.lock:
            return sum(1 for _, status in self.posts if status == 500)

    def repair(self) -> float:
        with self.lock:
            self.repaired_at = time.monotonic()
            return self.repaired_at

    def delivered_at(self) -> float | None:
        with self.lock:
            return next((at for at, status in self.posts if status == 200), None)


def _instant(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def schedule_of(ws: Path, backoff: float) -> tuple[float, float]:
    """From the request's own delivery list: when the schedule put the attempt after the
    last failed send (its ``at`` + backoff × 2^(sends − 1)), and when the 200 came."""
    [path] = (ws / "requests").glob("*.json")
    entries = json.loads(path.read_text())["delivery"]
    failed = [e for e in entries if e["ok"] is False]
    sends = sum(1 for e in failed if not e.get("within_send"))
    due = _instant(failed[-1]["at"]) + backoff * 2 ** (sends - 1)
    delivered = next(_instant(e["at"]) for e in entries if e["ok"] is True)
    return due, delivered


def _recorded(ws: Path) -> bool:
    found = list((ws / "requests").glob("*.json"))
    return bool(found) and any(
        e["ok"] is True for e in json.loads(found[0].read_text())["delivery"]
    )


def one_round(backoff: str, failures: int) -> tuple[float, float, float]:
    seconds = float(backoff.rstrip("s"))
    hook = Hook(failures)
    with tempfile.TemporaryDirectory(prefix="loopkit-redelivery-") as folder:
        ws = Path(folder)
        (ws / "agent.py").write_text("open('BLOCKED.md', 'w').write('## Question:\\nGo?\\n')\n")
        (ws / "loopkit.toml").write_text(
            f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n'
            f'[escalation]\nretry_backoff = "{backoff}"\n'
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
        env["LOOPKIT_HOME"] = str(ws / ".home")  # not the user's registry
        env.update(LOOPKIT_HITL_CHANNEL="slack", LOOPKIT_HITL_SLACK_WEBHOOK=hook.url)
        proc = subprocess.Popen([str(LOOPKIT), "-C", str(ws), "run"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
        try:
            wait_for(lambda: hook.failed() >= failures * 2, "the failed sends", DEADLINE)
            repaired, repaired_wall = hook.repair(), time.time()
            wait_for(lambda: hook.delivered_at() is not None, "the delivery", DEADLINE)
            delivered = hook.delivered_at()
            assert delivered is not None
            wait_for(lambda: _recorded(ws), "the delivery recorded", DEADLINE)
            due, sent = schedule_of(ws, seconds)
            return delivered - repaired, max(0.0, due - repaired_wall), sent - due
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            hook.server.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backoff", default="1s", help='seconds, as "1s" or "0.5s"')
    parser.add_argument("--failures", type=int, default=2)
    args = parser.parse_args()
    if not LOOPKIT.exists():
        raise SystemExit(f"redelivery: no loopkit at {LOOPKIT}; pip install -e . first")
    taken, schedule, lateness = [], [], []
    for _ in range(args.rounds):
        took, scheduled, late = one_round(args.backoff, args.failures)
        taken.append(took * 1000)
        schedule.append(scheduled * 1000)
        lateness.append(late * 1000)
    print(f"## redelivery ({args.rounds} rounds, retry_backoff {args.backoff}, "
          f"{args.failures} failed sends before the repair)\n")  # fmt: skip
    print("| metric | loopkit | baseline (the schedule's next attempt, same run) |")
    print("|---|---|---|")
    print(f"| repair → delivered, median | {statistics.median(taken):.0f} ms | "
          f"{statistics.median(schedule):.0f} ms |")  # fmt: skip
    print(f"| repair → delivered, max | {max(taken):.0f} ms | {max(schedule):.0f} ms |")
    print(f"| the 200's attempt after its scheduled time, max | {max(lateness):.0f} ms | 0 ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
