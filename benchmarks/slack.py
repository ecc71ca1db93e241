#!/usr/bin/env python3
"""Click → resume: how soon a loop runs again after its Slack button is clicked, beside a
Telegram tap measured the same way in the same run. Prints one markdown table.

    python benchmarks/slack.py [--rounds 20]

One ``loopkit run`` daemon per channel, in a temporary workspace, whose agent asks a question
(writes BLOCKED.md) on every run. Slack: the test suite's fake Slack on 127.0.0.1
(``tests/fakeslack.py``: the Web API over HTTP, Socket Mode over a WebSocket, envelopes
acknowledged), the supervisor listening over Socket Mode through ``slack_sdk``; a click on the
block's first button is delivered as a ``block_actions`` envelope. Telegram: the fake Bot API
(``tests/fakeserver.py``), a tap as a ``callback_query``. Each round measures from the click
(or tap) to the agent's next run (a line in its run log). Not part of the test suite;
every process is killed before the script exits.
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
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from common import agent_runs, wait_for  # noqa: E402  (this folder's shared helpers)

from fakeserver import FakeServer  # noqa: E402  (the test suite's fake Bot API)
from fakeslack import FakeSlack  # noqa: E402  (the test suite's fake Slack)

LOOPKIT = Path(sys.executable).parent / "loopkit"
TOKEN = "555555:AABenchSlackTokenNotARealOne_xy"
CHAT = 4242
AGENT = """\
import os
open(os.environ["LOOPKIT_WORKSPACE"] + ".runs.txt", "a").write(
    os.environ.get("LOOPKIT_DECISION", "") + "\\n"
)
open("BLOCKED.md", "w").write("## Question:\\nGo on?\\n## Choices:\\n- A) Yes — go\\n")
"""


def sent(ws: Path, seen: set[str]) -> tuple[str, object] | None:
    """A request not seen before whose message went out: its id and message id."""
    for path in (ws / "requests").glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except ValueError:
            continue  # being written
        if record["request_id"] in seen or record.get("status") != "open":
            continue
        for entry in record["delivery"]:
            if entry.get("ok") and entry.get("message_id") is not None:
                return record["request_id"], entry["message_id"]
    return None


def rounds(
    env: dict[str, str], root: Path, count: int, answer: Callable[[str, object], None]
) -> list[float]:
    ws = Path(tempfile.mkdtemp(prefix="loop-", dir=root))
    (ws / "agent.py").write_text(AGENT)
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "10s"\n'
        '[escalation]\nslack_mode = "socket"\n'
    )
    proc = subprocess.Popen([str(LOOPKIT), "-C", str(ws), "run"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    taken: list[float] = []
    seen: set[str] = set()
    try:
        for _ in range(count):
            request_id, message_id = wait_for(lambda: sent(ws, seen), "a block sent")
            seen.add(request_id)
            before = agent_runs(ws)
            start = time.monotonic()
            answer(request_id, message_id)
            wait_for(lambda before=before: agent_runs(ws) > before, "the loop resumed")
            taken.append((time.monotonic() - start) * 1000)
        return taken
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def base_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env["LOOPKIT_HOME"] = str(root / "home")
    return env


def slack_rounds(count: int) -> list[float]:
    slack = FakeSlack().start()
    try:
        with tempfile.TemporaryDirectory(prefix="loopkit-slack-") as folder:
            env = {**base_env(Path(folder)), **slack.env()}

            def click(request_id: str, ref: object) -> None:
                wait_for(lambda: slack.open_links() == 1, "the supervisor listening")
                slack.click("U0ANA", str(ref).split(":", 1)[1], 0)

            return rounds(env, Path(folder), count, click)
    finally:
        slack.close()


def telegram_rounds(count: int) -> list[float]:
    server = FakeServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="loopkit-tg-") as folder:
            env = {**base_env(Path(folder)), "LOOPKIT_HITL_CHANNEL": "telegram",
                   "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN, "LOOPKIT_HITL_TELEGRAM_CHAT": str(CHAT),
                   "LOOPKIT_HITL_TELEGRAM_API": server.url}  # fmt: skip

            def tap(request_id: str, message_id: object) -> None:
                server.push_update(
                    callback_query={
                        "id": f"cb-{request_id}", "from": {"id": 1, "first_name": "Ana"},
                        "data": f"{request_id}:0",
                        "message": {"message_id": message_id, "chat": {"id": CHAT}, "text": "x"},
                    }
                )  # fmt: skip

            return rounds(env, Path(folder), count, tap)
    finally:
        server.close()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if not LOOPKIT.exists():
        raise SystemExit(f"slack: no loopkit at {LOOPKIT}; pip install -e '.[slack]' first")
    rows = [("Slack click (Socket Mode)", slack_rounds(args.rounds)),
            ("Telegram tap (getUpdates)", telegram_rounds(args.rounds))]  # fmt: skip
    print(f"## click → loop resumed ({args.rounds} rounds each, same run)\n")
    print("| answer | p50 | p95 | max |")
    print("|---|---|---|---|")
    for name, taken in rows:
        print(f"| {name} | {statistics.median(taken):.0f} ms | {p95(taken):.0f} ms | "
              f"{max(taken):.0f} ms |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
