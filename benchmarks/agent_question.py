#!/usr/bin/env python3
"""The agent's question → the phone: how soon a question the agent asks under ``loopkit run``
reaches a (fake) Telegram. Prints one markdown table.

    python benchmarks/agent_question.py [--rounds 3] [--works-on 0] \\
        [--baseline /path/to/old/.venv/bin/loopkit]

Each round: a fake Bot API on 127.0.0.1 (the test suite's ``tests/fakeserver.py``), a fresh
workspace and a real ``loopkit run`` whose agent runs ``loopkit escalate`` (inside its
session, so without the bot's token, as every supervised agent is) and then ends its turn —
or, with ``--works-on S``, works on for S seconds first. The figure runs from BLOCKED.md's
mtime (its text written, just before it is linked into place) to the fake's arrival of
``sendMessage``; the failed attempts are those in the request's ``delivery`` list.
``--baseline`` runs the same rounds against another loopkit (an older checkout installed in
its own virtualenv; the agent runs that one's ``escalate`` too), so both rows come from one
run on one machine. ``retry_backoff`` is left at its default (30 s). Not part of the test
suite; every process is killed before the script exits.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from common import wait_for  # noqa: E402  (this folder's shared helpers)

from fakeserver import FakeServer  # noqa: E402  (the test suite's fake Bot API)

TOKEN = "555555:AABenchAgentQuestionNotARealOne_x"
CHAT = 4242
AGENT = """\
import subprocess, sys, time
subprocess.call([{loopkit!r}, "escalate", "-q", "Which payment flow?", "-c", "checkout",
                 "-a", "read PROMPT.md", "--choice", "Flow A — old API",
                 "--choice", "Flow B — migration"], stdout=subprocess.DEVNULL)
time.sleep({works_on})
"""


def one_round(loopkit: str, works_on: float, root: Path) -> tuple[float, int]:
    """(seconds from BLOCKED.md to sendMessage, failed attempts recorded)."""
    server = FakeServer().start()
    ws = root / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(AGENT.format(loopkit=loopkit, works_on=works_on))
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\niteration_timeout = "10m"\n'
        '[escalation]\nchannel = "telegram"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(
        LOOPKIT_HOME=str(root / "home"),
        LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT=str(CHAT),
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    proc = subprocess.Popen([loopkit, "-C", str(ws), "run"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        deadline = 120.0 + works_on  # the baseline waits out retry_backoff (30 s) and the turn
        sent = wait_for(lambda: server.calls("/sendMessage"), "sendMessage", deadline)[0]
        blocked_at = (ws / "BLOCKED.md").stat().st_mtime

        def delivered() -> dict[str, object] | None:
            for path in (ws / "requests").glob("*.json"):
                record = json.loads(path.read_text())
                if any(entry.get("ok") for entry in record["delivery"]):
                    return record  # type: ignore[no-any-return]
            return None

        record = wait_for(delivered, "the delivery recorded")
        failed = sum(1 for entry in record["delivery"] if entry.get("ok") is False)
        return sent.at - blocked_at, failed
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        server.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--works-on", type=float, default=0.0, metavar="S",
                        help="seconds the agent works on after asking")  # fmt: skip
    parser.add_argument("--baseline", help="another loopkit executable to run the same rounds on")
    args = parser.parse_args()
    here = Path(sys.executable).parent / "loopkit"
    if not here.exists():
        raise SystemExit(f"agent_question: no loopkit at {here}; pip install -e . first")
    rows = [("this checkout", str(here))]
    if args.baseline:
        rows.insert(0, ("baseline", args.baseline))
    turn = f"works on {args.works_on:g} s" if args.works_on else "ends its turn"
    print(f"## the agent's question → the phone ({args.rounds} rounds; the agent asks, then "
          f"{turn})\n")  # fmt: skip
    print("| loopkit | BLOCKED.md → sendMessage, p50 / max | failed attempts recorded |")
    print("|---|---|---|")
    for name, exe in rows:
        taken: list[float] = []
        failed = 0
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="loopkit-agent-question-") as folder:
                latency, failures = one_round(exe, args.works_on, Path(folder))
            taken.append(latency * 1000)
            failed += failures
        print(f"| {name} | {statistics.median(taken):.0f} / {max(taken):.0f} ms | "
              f"{failed} in {args.rounds} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
