#!/usr/bin/env python3
"""The right person, at once (SPEC §29): how soon a block reaches a person's phone, and how
soon a tap on it has the loop running again. Prints one markdown table.

    python benchmarks/people.py [--rounds 10]

A ``loopkit run`` daemon whose verify always fails blocks once per iteration
(``max_verify_failures = 1``); its ``[[escalation.people]]`` are Ana on ntfy (the test suite's
fake ntfy server, ``tests/fakentfy.py``) and the on-call rotation on PagerDuty (its fake
Events API, ``tests/fakepagerduty.py``), both asked at once; a real ``loopkit serve`` on
127.0.0.1 serves the one-tap URLs. Each round:

- **block → push**: from ``BLOCKED.md``'s mtime to the push's arrival at the fake ntfy
  server (wall clock, both), and to the incident's trigger at the fake PagerDuty;
- **tap → resume**: from the moment the phone's tap (an HTTP POST of the push's first
  button, as the ntfy app sends it) leaves until the agent runs again (a line in its run
  log, beside the workspace); and until Ana's follow-up push ("recorded: …") arrives.

Baselines, in the same run, on a second workspace with ``channel = "telegram"`` and the test
suite's fake Bot API: block → ``sendMessage`` arriving, and ``loopkit reply`` from a terminal
→ the agent running again. All on 127.0.0.1; not part of the test suite; every process is
killed before the script exits.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

from fakentfy import FakeNtfy  # noqa: E402  (the test suite's fakes)
from fakepagerduty import TEST_KEY, FakePagerDuty  # noqa: E402
from fakeserver import FakeServer  # noqa: E402

LOOPKIT = Path(sys.executable).parent / "loopkit"
TOKEN = "555555:AABenchPeopleTokenNotARealOne_x"
CHAT = 4242
# The run log beside the workspace: a log in it would be the agent's work to the stuck detector.
AGENT = 'import os\nopen(os.environ["LOOPKIT_WORKSPACE"] + ".runs.txt", "a").write("run\\n")\n'


def base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env["LOOPKIT_HOME"] = str(home)
    return env


def workspace(root: Path, name: str, escalation: str) -> Path:
    ws = root / name
    ws.mkdir()
    (ws / "agent.py").write_text(AGENT)
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\nverify = "false"\n'
        f'max_verify_failures = 1\npause = "0s"\n{escalation}'
    )
    return ws


def blocked(ws: Path) -> tuple[str, float] | None:
    """The request the standing BLOCKED.md names, and its mtime (wall seconds)."""
    path = ws / "BLOCKED.md"
    try:
        text, mtime = path.read_text(), path.stat().st_mtime_ns / 1e9
    except OSError:
        return None
    marker = text.split("loopkit request: ", 1)
    if len(marker) < 2:
        return None
    return marker[1].split()[0], mtime


def push_for(ntfy: FakeNtfy, request_id: str) -> object:
    for published in ntfy.messages("ana"):
        if request_id in json.dumps(published.message) and published.actions:
            return published
    return None


def people_rounds(rounds: int, root: Path) -> dict[str, list[float]]:
    root.mkdir()
    ntfy, pd = FakeNtfy().start(), FakePagerDuty(TEST_KEY).start()
    env = base_env(root / "home")
    env.update(LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY=TEST_KEY, LOOPKIT_HITL_PAGERDUTY_API=pd.url)
    out = root / "serve.out"
    with out.open("wb") as sink:
        serve = subprocess.Popen([str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"], env=env,
                                 stdout=sink, stderr=subprocess.STDOUT, cwd=root,
                                 start_new_session=True)  # fmt: skip
    figures: dict[str, list[float]] = {"push": [], "page": [], "resume": [], "told": []}
    run = None
    try:
        found = wait_for(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), "serve")
        env["LOOPKIT_INBOX_URL"] = found.group(0)  # type: ignore[attr-defined]
        ws = workspace(root, "shop", (
            '[[escalation.people]]\nname = "Ana"\nchannel = "ntfy"\n'
            f'address = "{ntfy.topic_url("ana")}"\nafter = "0m"\n'
            '[[escalation.people]]\nname = "On call"\nchannel = "pagerduty"\nafter = "0m"\n'
        ))  # fmt: skip
        run = subprocess.Popen([str(LOOPKIT), "-C", str(ws), "run"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
        for _ in range(rounds):
            request_id, mtime = wait_for(lambda: blocked(ws), "a block")
            push = wait_for(lambda rid=request_id: push_for(ntfy, rid), "the push")
            figures["push"].append((push.wall - mtime) * 1000)  # type: ignore[attr-defined]
            pd.wait_for(request_id, "triggered")
            [paged] = [at for at, e in zip(pd.arrived, pd.events, strict=True)
                       if e.get("dedup_key") == request_id]  # fmt: skip
            figures["page"].append((paged - mtime) * 1000)
            before, told = agent_runs(ws), len(ntfy.messages("ana"))
            start = time.monotonic()
            tapped = FakeNtfy.tap(push, 0)  # type: ignore[arg-type]
            if tapped.status != 200:
                raise SystemExit(f"people: the tap was refused: {tapped.status} {tapped.body}")
            wait_for(lambda b=before: agent_runs(ws) > b, "the loop resumed")
            figures["resume"].append((time.monotonic() - start) * 1000)
            reading = wait_for(
                lambda t=told: next((m for m in ntfy.messages("ana")[t:]
                                     if "recorded: " in m.message["message"]), None),
                "the reading's push",
            )  # fmt: skip
            figures["told"].append((reading.at - start) * 1000)
    finally:
        for proc in (run, serve):
            if proc is not None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        ntfy.close()
        pd.close()
    return figures


def telegram_rounds(rounds: int, root: Path) -> dict[str, list[float]]:
    root.mkdir()
    server = FakeServer().start()
    env = base_env(root / "home")
    env.update(LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN, LOOPKIT_HITL_TELEGRAM_CHAT=str(CHAT),
               LOOPKIT_HITL_TELEGRAM_API=server.url)  # fmt: skip
    ws = workspace(root, "shop", '[escalation]\nchannel = "telegram"\n')
    run = subprocess.Popen([str(LOOPKIT), "-C", str(ws), "run"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)  # fmt: skip
    figures: dict[str, list[float]] = {"push": [], "resume": []}
    try:
        for n in range(1, rounds + 1):
            request_id, mtime = wait_for(lambda: blocked(ws), "a block")
            sent = server.wait_for("/sendMessage", n)[n - 1]
            figures["push"].append((sent.at - mtime) * 1000)
            before = agent_runs(ws)
            start = time.monotonic()
            subprocess.run([str(LOOPKIT), "-C", str(ws), "reply", "--request-id", request_id,
                            "--reply", "A"], env=env, capture_output=True, check=True)  # fmt: skip
            wait_for(lambda b=before: agent_runs(ws) > b, "the loop resumed")
            figures["resume"].append((time.monotonic() - start) * 1000)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        server.close()
    return figures


def shown(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} / {max(values):.0f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    if not LOOPKIT.exists():
        raise SystemExit(f"people: no loopkit at {LOOPKIT}; pip install -e . first")
    with tempfile.TemporaryDirectory(prefix="loopkit-people-") as folder:
        people = people_rounds(args.rounds, Path(folder) / "people")
    with tempfile.TemporaryDirectory(prefix="loopkit-people-") as folder:
        telegram = telegram_rounds(args.rounds, Path(folder) / "telegram")
    print(f"## the right person, at once ({args.rounds} rounds; p50 / max)\n")
    print("| path | loopkit | baseline (same run) |")
    print("|---|---|---|")
    print(f"| block → ntfy push arrives | {shown(people['push'])} | "
          f"block → Telegram `sendMessage` arrives: {shown(telegram['push'])} |")  # fmt: skip
    print(f"| block → PagerDuty trigger arrives | {shown(people['page'])} | — |")
    print(f"| ntfy tap → agent runs again | {shown(people['resume'])} | "
          f"`loopkit reply` → agent runs again: {shown(telegram['resume'])} |")  # fmt: skip
    print(f"| ntfy tap → the reading's push arrives | {shown(people['told'])} | — |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
