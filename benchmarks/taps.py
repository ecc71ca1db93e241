#!/usr/bin/env python3
"""Tap → resume: how soon a loop runs again after its button is tapped, with 1 and with 5
loops blocked on one bot. Prints one markdown table.

    python benchmarks/taps.py [--rounds 5]

N ``loopkit run`` daemons in N temporary workspaces share one bot on a fake Bot API on
127.0.0.1 with Telegram's semantics (the test suite's ``tests/fakeserver.py``: an offset
confirms for everyone, a second concurrent getUpdates gets the first a 409). One of them
holds the bot's lease and polls for all. For each loop a tap is pushed and the time until
that loop's agent runs again (a line in its run log) is measured. Baseline, in the same
run: the same resume after ``loopkit reply`` from a terminal (no phone, no poller). Not part
of the test suite; every process is killed before the script exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from common import agent_runs, wait_for  # noqa: E402  (this folder's shared helpers)

from fakeserver import FakeServer  # noqa: E402  (the test suite's fake Bot API)

LOOPKIT = Path(sys.executable).parent / "loopkit"
TOKEN = "555555:AABenchTapsTokenNotARealOne_xyz"
CHAT = 4242
AGENT = """\
import os
open(os.environ["LOOPKIT_WORKSPACE"] + ".runs.txt", "a").write(
    os.environ.get("LOOPKIT_DECISION", "") + "\\n"
)
if not os.path.exists("asked"):
    open("asked", "w").close()
    open("BLOCKED.md", "w").write("## Question:\\nGo on?\\n## Choices:\\n- A) Yes — go\\n")
"""


def request_of(ws: Path) -> tuple[str, int] | None:
    import json

    for path in (ws / "requests").glob("*.json"):
        record = json.loads(path.read_text())
        for entry in record["delivery"]:
            if entry.get("ok") and isinstance(entry.get("message_id"), int):
                return record["request_id"], entry["message_id"]
    return None


def one_size(loops: int, server: FakeServer, root: Path, *, by_reply: bool) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(
        LOOPKIT_HOME=str(root / "home"),
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT=str(CHAT),
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    spaces, procs = [], []
    for n in range(loops):
        ws = Path(tempfile.mkdtemp(prefix=f"loop{n}-", dir=root))
        (ws / "agent.py").write_text(AGENT)
        (ws / "loopkit.toml").write_text(
            f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "10s"\n'
        )
        spaces.append(ws)
        procs.append(subprocess.Popen([str(LOOPKIT), "-C", str(ws), "run"], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))  # fmt: skip
    try:
        asked = [wait_for(lambda ws=ws: request_of(ws), f"{ws.name} asked") for ws in spaces]
        wait_for(lambda: server.calls("getUpdates"), "the lease holder polling")
        taken = []
        for ws, found in zip(spaces, asked, strict=True):
            request_id, message_id = found  # type: ignore[misc]
            before = agent_runs(ws)
            start = time.monotonic()
            if by_reply:
                argv = [str(LOOPKIT), "-C", str(ws), "reply", "--request-id", request_id]
                subprocess.run([*argv, "--reply", "A"], env=env, capture_output=True, check=True)
            else:
                server.push_update(
                    callback_query={
                        "id": f"cb-{request_id}", "from": {"id": 1, "first_name": "Ana"},
                        "data": f"{request_id}:0",
                        "message": {"message_id": message_id, "chat": {"id": CHAT}, "text": "x"},
                    }
                )  # fmt: skip
            wait_for(lambda ws=ws, before=before: agent_runs(ws) > before, f"{ws.name} resumed")
            taken.append((time.monotonic() - start) * 1000)
        return taken
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not LOOPKIT.exists():
        raise SystemExit(f"taps: no loopkit at {LOOPKIT}; pip install -e . first")
    rows = []
    for loops in (1, 5):
        tapped: list[float] = []
        replied: list[float] = []
        for _ in range(args.rounds):
            for by_reply, taken in ((False, tapped), (True, replied)):
                with tempfile.TemporaryDirectory(prefix="loopkit-taps-") as folder:
                    server = FakeServer().start()
                    try:
                        taken += one_size(loops, server, Path(folder), by_reply=by_reply)
                    finally:
                        server.close()
        rows.append((loops, tapped, replied))
    print(f"## tap → resume ({args.rounds} rounds; every loop of each size tapped once a round)\n")
    print("| loops blocked on one bot | tap → agent runs again, p50 / max | baseline: "
          "`loopkit reply` → agent runs again, p50 / max (same run) |")  # fmt: skip
    print("|---|---|---|")
    for loops, tapped, replied in rows:
        print(f"| {loops} | {statistics.median(tapped):.0f} / {max(tapped):.0f} ms | "
              f"{statistics.median(replied):.0f} / {max(replied):.0f} ms |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
