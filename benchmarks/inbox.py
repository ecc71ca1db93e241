#!/usr/bin/env python3
"""Inbox answer → resume: how soon a waiting loop runs again after a tap in the web inbox,
and how much the inbox's list weighs; and the inbox under load: what thousands of half-open
connections do to ``loopkit serve``. Prints markdown tables.

    python benchmarks/inbox.py [--rounds 10] [--half-open 5000] [--baseline OTHER_LOOPKIT]

A ``loopkit run`` daemon whose verify always fails blocks once per iteration; a real
``loopkit serve`` on 127.0.0.1 serves the inbox. Each round an HTTP client with the session
cookie posts the answer a tap posts (the form's CSRF token included) and the time until the
agent runs again (a line in its run log) is measured. Baseline, in the same run: the
same resume after ``loopkit reply`` from a terminal.

Under load (``--half-open N``, 0 skips it): a ``loopkit serve`` started with the soft
RLIMIT_NOFILE a systemd user service gets (``--nofile 1024``) is sent N connections, each
sending half a request header and never the rest, 32 at a time (from this process, its own
limit raised for them). Then, with them all accepted (or 10 s gone), one authenticated
request (the token exchanged for the session, the list) is timed, 5 s at most; serve's open
files are counted (``/proc/PID/fd``) at their peak, and again 10 s later. ``--baseline``
runs the same against another ``loopkit`` executable (an older checkout) in the same run.
All on 127.0.0.1. Not part of the test suite; every process is killed, every socket closed,
before the script exits.
"""

from __future__ import annotations

import argparse
import contextlib
import http.cookiejar
import os
import re
import resource
import selectors
import signal
import socket
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
# Its runs are logged beside the workspace (common.agent_runs): the benchmark's instrument,
# not the agent's work (SPEC §25).
AGENT = 'import os\nopen(os.environ["LOOPKIT_WORKSPACE"] + ".runs.txt", "a").write("run\\n")\n'


def blocked_on(ws: Path) -> str | None:
    path = ws / "BLOCKED.md"
    try:
        found = re.search(r"loopkit request: (\w+)", path.read_text())
    except OSError:
        return None
    return found.group(1) if found else None


HALF = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow"  # the headers never end
WITH_NOFILE = (
    "import os, resource, sys; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), hard)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def unaccepted(port: int) -> int:
    """Connections in the listen queue of 127.0.0.1:``port`` (its LISTEN row's rx_queue)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(f":{port:04X}") and fields[3] == "0A":
            return int(fields[4].split(":")[1], 16)
    return 0


def half_open(loopkit: str, count: int, nofile: int) -> dict[str, object]:
    """One ``loopkit serve`` under ``count`` half-open connections: its figures."""
    root = Path(tempfile.mkdtemp(prefix="lk-halfopen-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(LOOPKIT_HOME=str(root / "home"), LOOPKIT_HITL_CHANNEL="none")
    out = root / "serve.out"
    with out.open("wb") as sink:
        serve = subprocess.Popen(
            [sys.executable, "-c", WITH_NOFILE, str(nofile), loopkit, "serve",
             "--listen", "127.0.0.1:0"],
            env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True, cwd=root,
        )  # fmt: skip
    sockets: list[socket.socket] = []
    try:
        found = wait_for(lambda: re.search(r"http://[\d.]+:(\d+)", out.read_text()), "serve")
        base, port = found.group(0), int(found.group(1))  # type: ignore[attr-defined]
        token = (root / "home" / "inbox.token").read_text().strip()
        wait_for(lambda: _healthy(base), "serve answering")
        before = open_files(serve.pid)
        peak = before
        for start in range(0, count, 32):
            batch = []
            with selectors.DefaultSelector() as selector:
                for _ in range(min(32, count - start)):
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    sock.setblocking(False)
                    sock.connect_ex(("127.0.0.1", port))
                    selector.register(sock, selectors.EVENT_WRITE)
                    batch.append(sock)
                pending, deadline = len(batch), time.monotonic() + 5
                while pending and time.monotonic() < deadline:
                    for key, _ in selector.select(timeout=0.5):
                        conn = key.fileobj
                        assert isinstance(conn, socket.socket)
                        selector.unregister(conn)
                        pending -= 1
                        with contextlib.suppress(OSError):
                            conn.send(HALF)
            sockets += batch
            peak = max(peak, open_files(serve.pid))
        end = time.monotonic() + 10
        while unaccepted(port) and time.monotonic() < end:
            peak = max(peak, open_files(serve.pid))
            time.sleep(0.01)
        left = unaccepted(port)
        web = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        start_at = time.monotonic()
        try:
            status = web.open(f"{base}/?token={token}", timeout=5).status
            answer = f"{status} in {(time.monotonic() - start_at) * 1000:.0f} ms"
        except OSError as exc:
            answer = f"failed after {time.monotonic() - start_at:.1f} s ({exc})"
        peak = max(peak, open_files(serve.pid))
        time.sleep(10)  # the figure is what is still open 10 s on
        later = open_files(serve.pid)
    finally:
        for sock in sockets:
            sock.close()
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait()
    return {"before": before, "peak": peak, "unaccepted": left, "answer": answer,
            "later": later}  # fmt: skip


def _healthy(base: str) -> bool:
    try:
        return urllib.request.urlopen(f"{base}/healthz", timeout=1).read() == b"ok\n"
    except OSError:
        return False


def half_open_table(args: argparse.Namespace) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.half_open + 300
    if hard != resource.RLIM_INFINITY and hard < want:
        raise SystemExit(f"inbox.py: --half-open {args.half_open} needs {want} open files here; "
                         f"the hard limit is {hard}")  # fmt: skip
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    runs = [("loopkit (this checkout)", str(LOOPKIT))]
    if args.baseline:
        runs.insert(0, (f"baseline: {args.baseline}", args.baseline))
    print(f"\n{args.half_open} half-open connections, serve's soft RLIMIT_NOFILE {args.nofile}:\n")
    print("| serve | open files: idle → peak | not accepted after 10 s | authenticated "
          "request | open files 10 s later |")  # fmt: skip
    print("|---|---:|---:|---|---:|")
    for label, loopkit in runs:
        got = half_open(loopkit, args.half_open, args.nofile)
        print(f"| {label} | {got['before']} → {got['peak']} | {got['unaccepted']} | "
              f"{got['answer']} | {got['later']} |")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="0: no answer rounds")
    parser.add_argument("--half-open", type=int, default=5000, help="0: no load figures")
    parser.add_argument("--nofile", type=int, default=1024, help="serve's soft RLIMIT_NOFILE")
    parser.add_argument("--baseline", help="another loopkit executable to load the same way")
    args = parser.parse_args()
    if args.rounds > 0:
        answer_rounds(args)
    if args.half_open > 0:
        half_open_table(args)
    return 0


def answer_rounds(args: argparse.Namespace) -> None:
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


if __name__ == "__main__":
    raise SystemExit(main())
