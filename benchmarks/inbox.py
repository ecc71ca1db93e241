#!/usr/bin/env python3
"""Inbox answer → resume: how soon a waiting loop runs again after a tap in the web inbox,
and how much the inbox's list weighs. Prints one markdown table.

    python benchmarks/inbox.py [--rounds 10]

A ``loopkit run`` daemon whose verify always fails blocks once per iteration; a real
``loopkit serve`` on 127.0.0.1 serves the inbox. Each round an HTTP client with the session
cookie posts the answer a tap posts (the form's CSRF token included) and the time until the
agent runs again (a line in its ``runs.txt``) is measured. Baseline, in the same run: the
same resume after ``loopkit reply`` from a terminal. Not part of the test suite; every
process is killed before the script exits.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from common import agent_runs, wait_for

LOOPKIT = Path(sys.executable).parent / "loopkit"
AGENT = 'open("runs.txt", "a").write("run\\n")\n'


def blocked_on(ws: Path) -> str | None:
    path = ws / "BLOCKED.md"
    try:
        found = re.search(r"loopkit request: (\w+)", path.read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lk-inbox-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(LOOPKIT_HOME=str(root / "home"), LOOPKIT_HITL_CHANNEL="none")
    ws = root / "shop"
    ws.mkdir()
    (ws / "agent.py").write_text(AGENT)
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\nverify = "false"\n'
        'max_verify_failures = 1\npause = "0s"\n'
    )
    out = root / "serve.out"
    with out.open("wb") as sink:
        serve = subprocess.Popen(
            [str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    loop = subprocess.Popen(
        [str(LOOPKIT), "-C", str(ws), "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        found = wait_for(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), "serve")
        base = found.group(0)  # type: ignore[attr-defined]
        token = (root / "home" / "inbox.token").read_text().strip()
        web = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        page = web.open(f"{base}/?token={token}").read()
        taken: dict[str, list[float]] = {"inbox": [], "reply": []}
        for number in range(args.rounds * 2):
            how = "inbox" if number % 2 == 0 else "reply"
            request_id = wait_for(lambda: blocked_on(ws), "a block")
            before = agent_runs(ws)
            if how == "inbox":
                page = web.open(f"{base}/").read()
                csrf = re.search(rb'name="csrf" value="([^"]+)"', page)
                action = re.search(rb'action="(/r/[^"]+/answer)"', page)
                assert csrf and action, "the inbox shows the open request"
                data = urllib.parse.urlencode({"csrf": csrf.group(1), "reply": "A"}).encode()
                start = time.monotonic()
                web.open(base + action.group(1).decode(), data).read()
            else:
                start = time.monotonic()
                subprocess.run(
                    [
                        str(LOOPKIT),
                        "-C",
                        str(ws),
                        "reply",
                        "--request-id",
                        str(request_id),
                        "--reply",
                        "A",
                    ],
                    env=env,
                    check=True,
                    capture_output=True,
                )
            wait_for(lambda before=before: agent_runs(ws) > before, "the loop resumed")
            taken[how].append((time.monotonic() - start) * 1000)
            wait_for(lambda rid=request_id: blocked_on(ws) not in (None, rid), "the next block")
        weight = len(web.open(f"{base}/").read())
        weight += len(web.open(f"{base}/static/inbox.css").read())
        weight += len(web.open(f"{base}/static/inbox.js").read())
    finally:
        for proc in (loop, serve):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print("| answer | rounds | p50 | p95 | max |")
    print("|---|---:|---:|---:|---:|")
    for how, label in (
        ("inbox", "tap in the web inbox → loop resumed"),
        ("reply", "baseline: `loopkit reply` → loop resumed"),
    ):
        values = sorted(taken[how])
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        print(
            f"| {label} | {len(values)} | {statistics.median(values):.0f} ms | "
            f"{p95:.0f} ms | {values[-1]:.0f} ms |"
        )
    print(f"\nThe list with one open request, its CSS and JS: {weight} bytes.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
