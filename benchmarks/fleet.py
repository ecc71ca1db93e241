#!/usr/bin/env python3
"""Fleet: a reply on machine A → the loop on machine B runs again, and the bot lease's
failover after its holder is killed. Prints one markdown table.

    python benchmarks/fleet.py [--rounds 20]

Starts a PostgreSQL server of its own (the test suite's ``tests/fleet/pgserver.py``: the
distribution's binaries, a free port on 127.0.0.1). "Machines" are two ``LOOPKIT_HOME``s
with a workspace each. B's ``loopkit run`` blocks once per iteration (its verify always
fails); each round A answers B's open request — by the fleet's own ``answer_remote`` in this
process (the propagation alone: compare-and-set, NOTIFY, B's follower applying it), and by
``loopkit reply`` on A (what a human at A's terminal sees, process start included) — and the
time until B's agent runs again is measured. Baseline, same run: ``loopkit reply`` on B
itself. Failover: A's and B's supervisors share a bot (a fake Bot API on 127.0.0.1); the
holder is killed with SIGKILL and the time until the other holds the lease is measured.
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
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fleet")]

from common import agent_runs, wait_for  # noqa: E402  (this folder's shared helpers)
from pgserver import PgServer  # noqa: E402

from fakeserver import FakeServer  # noqa: E402

LOOPKIT = Path(sys.executable).parent / "loopkit"
TOKEN = "888888:AAFleetBenchTokenNotARealOne_xyz"
# Its runs are logged beside the workspace (common.agent_runs): the benchmark's instrument,
# not the agent's work (SPEC §25).
AGENT = 'import os\nopen(os.environ["LOOPKIT_WORKSPACE"] + ".runs.txt", "a").write("run\\n")\n'


def machine(root: Path, name: str, dsn: str, **extra: str) -> tuple[Path, dict[str, str]]:
    ws = root / f"ws-{name}"
    ws.mkdir()
    (ws / "agent.py").write_text(AGENT)
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\nverify = "false"\n'
        'max_verify_failures = 1\npause = "0s"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(
        {
            "LOOPKIT_HOME": str(root / f"home-{name}"),
            "LOOPKIT_FLEET_DSN": dsn,
            "LOOPKIT_HITL_CHANNEL": "none",
            **extra,
        }
    )
    return ws, env


def blocked_on(ws: Path) -> str | None:
    try:
        found = re.search(r"loopkit request: (\w+)", (ws / "BLOCKED.md").read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def start(ws: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(LOOPKIT), "-C", str(ws), "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def replies(pg: PgServer, root: Path, rounds: int) -> dict[str, list[float]]:
    dsn = pg.new_database()
    _, env_a = machine(root, "a", dsn)
    ws_b, env_b = machine(root, "b", dsn)
    subprocess.run([str(LOOPKIT), "fleet", "init"], env=env_a, check=True, capture_output=True)
    os.environ["LOOPKIT_HOME"] = env_a["LOOPKIT_HOME"]  # this process answers as machine A
    from loopkit.fleet.pg import PgHub

    hub = PgHub(dsn)
    loop = start(ws_b, env_b)
    taken: dict[str, list[float]] = {"fleet": [], "cli-a": [], "cli-b": []}
    try:
        for number in range(rounds * 3):
            how = ("fleet", "cli-a", "cli-b")[number % 3]
            request_id = wait_for(lambda: blocked_on(ws_b), "b blocked")
            remote = wait_for(lambda rid=request_id: hub.find(str(rid)), "the row in the fleet")
            before = agent_runs(ws_b)
            began = time.monotonic()
            if how == "fleet":
                hub.answer_remote(remote, "A", by="bench", via="cli", about=None)  # type: ignore[arg-type]
            else:
                env = env_a if how == "cli-a" else env_b
                subprocess.run(
                    [str(LOOPKIT), "reply", "--request-id", str(request_id), "--reply", "A"],
                    env=env,
                    check=True,
                    capture_output=True,
                )
            wait_for(lambda before=before: agent_runs(ws_b) > before, "b resumed")
            taken[how].append((time.monotonic() - began) * 1000)
            wait_for(lambda rid=request_id: blocked_on(ws_b) not in (None, rid), "the next block")
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()
    return taken


def holders(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND a.application_name LIKE 'loopkit lease %'"
        ).fetchall()
    return [name for (name,) in rows]


def failover(pg: PgServer, root: Path, rounds: int) -> list[float]:
    server = FakeServer().start()
    taken = []
    try:
        for number in range(rounds):
            dsn = pg.new_database()
            phone = {
                "LOOPKIT_HITL_CHANNEL": "telegram",
                "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
                "LOOPKIT_HITL_TELEGRAM_CHAT": "42",
                "LOOPKIT_HITL_TELEGRAM_API": server.url,
            }
            here = root / f"failover-{number}"
            here.mkdir()
            ws_a, env_a = machine(here, "a", dsn, **phone)
            ws_b, env_b = machine(here, "b", dsn, **phone)
            subprocess.run(
                [str(LOOPKIT), "fleet", "init"], env=env_a, check=True, capture_output=True
            )
            first = start(ws_a, env_a)
            wait_for(lambda dsn=dsn: holders(dsn), "a holds the lease")
            second = start(ws_b, env_b)
            wait_for(lambda ws_b=ws_b: blocked_on(ws_b), "b blocked")
            (holder,) = holders(dsn)
            began = time.monotonic()
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            wait_for(lambda h=holder, d=dsn: holders(d) and holders(d) != [h], "failover")
            taken.append((time.monotonic() - began) * 1000)
            os.killpg(second.pid, signal.SIGKILL)
            second.wait()
    finally:
        server.close()
    return taken


def row(label: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"| {label} | {len(ordered)} | {statistics.median(ordered):.0f} ms | {p95:.0f} ms | "
        f"{ordered[-1]:.0f} ms |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--failovers", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="lk-fleet-"))
    pg = PgServer()
    pg.start()
    try:
        taken = replies(pg, root, args.rounds)
        moved = failover(pg, root, args.failovers)
    finally:
        pg.stop(remove=True)
    print("| what | rounds | p50 | p95 | max |")
    print("|---|---:|---:|---:|---:|")
    print(
        row(
            "answer on A (the fleet's compare-and-set + NOTIFY) → B's loop runs again",
            taken["fleet"],
        )
    )
    print(row("`loopkit reply` on A → B's loop runs again", taken["cli-a"]))
    print(row("baseline: `loopkit reply` on B → B's loop runs again", taken["cli-b"]))
    print(row("bot lease: holder killed (SIGKILL) → the other machine holds it", moved))
    print(json.dumps({"rounds": args.rounds, "failovers": args.failovers}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
