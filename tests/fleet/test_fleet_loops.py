"""Every machine's loops, steered from any machine (SPEC section 22), against a real
PostgreSQL server: "machines" are LOOPKIT_HOMEs with workspaces of their own, each running
real supervisors, sharing one database.

``ps`` on one machine lists the other's running, paused and finished loops (never its own
twice); a pause, a resume, a stop and a note given on one machine land on the loop of
another, once each, as the local path writes them; a machine not heard from shows its loops
``unknown``; a repo name two machines share needs ``MACHINE:REPO``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import psycopg

from loopkit.fleet import schema

from helpers import GATED_AGENT, LOOPKIT, Daemon, gated_runs, open_gate, setup, wait_until
from machines import Machine

RESTING = 'pause = "1h"'  # a loop that runs and rests between iterations: no stray agent


def ps(machine: Machine) -> dict[tuple[str | None, str], dict[str, Any]]:
    """``loopkit ps --json`` on ``machine``, by (machine, repo)."""
    done = machine.lk("ps", "--json", ws=False)
    assert done.returncode == 0, done.stderr
    return {(row["machine"], row["repo"]): row for row in json.loads(done.stdout)}


def state_on(a: Machine, b: Machine, repo: str) -> str | None:
    row = ps(a).get((b.name, repo))
    return None if row is None else str(row["state"])


def orders(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT command, note, via, applied_at IS NOT NULL, outcome FROM loopkit_steer "
            "ORDER BY id"
        ).fetchall()


def test_ps_on_one_machine_lists_the_other_s_running_paused_and_finished_loops(
    tmp_path: Path, dsn: str
) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    setup(a.ws, 'done = ["true"]', verify="exit 0\n")
    assert a.lk("run").returncode == 0  # a's own loop, finished
    shop, billing, docs = (b.workspace(name) for name in ("shop", "billing", "docs"))
    setup(docs, 'done = ["true"]', verify="exit 0\n")
    finished = b.lk("run", ws=docs)
    assert finished.returncode == 0, finished.stderr
    setup(shop, RESTING, verify="exit 0\n")
    setup(billing, RESTING, verify="exit 0\n")
    assert b.lk("pause", ws=billing).returncode == 0  # paused before it starts
    with Daemon(shop, env=b.env) as running, Daemon(billing, env=b.env) as held:
        running.wait_state(status="running", iteration=1)
        held.wait_state(status="paused")
        wanted = {"shop": "running", "billing": "paused", "docs": "finished"}
        wait_until(
            lambda: {repo: state_on(a, b, repo) for repo in wanted} == wanted,
            15,
            "a's ps shows b's loops as they are",
        )
        rows = ps(a)
        assert rows[(None, "ws-a")]["state"] == "finished"  # a's own, from its files
        assert (a.name, "ws-a") not in rows  # …and never again from the fleet
        shop_row = rows[(b.name, "shop")]
        assert shop_row["pid"] == running.proc.pid and shop_row["iteration"] == 1
        assert shop_row["workspace"] == str(shop) and shop_row["heard_at"]
        assert shop_row["last_verify"]["ok"] is True
        assert rows[(b.name, "billing")]["paused_by"].startswith("pause by ")
        table = a.lk("ps", ws=False).stdout
        assert "MACHINE" in table and b.name in table and "here" in table
        status = json.loads(a.lk("fleet", "status", "--json").stdout)
        assert status["loops"] == {a.name: 1, b.name: 3} and status["steering_not_applied"] == 0
        assert f"{b.name}: seen" in a.lk("fleet", "status").stdout
        assert "3 loop(s)" in a.lk("fleet", "status").stdout
        os.kill(running.proc.pid, signal.SIGTERM)  # a supervisor that ends says so as it goes
        assert running.wait() == 143
        assert state_on(a, b, "shop") == "stopped"


def test_pause_a_note_resume_and_stop_from_one_machine_reach_a_loop_on_another(
    tmp_path: Path, dsn: str
) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    setup(b.ws, agent=GATED_AGENT, verify="exit 0\n")
    os.mkfifo(b.ws / "gate")
    assert a.lk("ps", ws=False).returncode == 0  # a has a name in the fleet
    with Daemon(b.ws, env=b.env) as loop:
        wait_until(lambda: gated_runs(b.ws) == ["1|"], what="iteration 1 on b")
        wait_until(lambda: state_on(a, b, "ws-b") == "running", 15, "a sees b's loop run")
        paused = a.lk("pause", "ws-b", ws=False)
        assert paused.returncode == 0, paused.stderr
        assert paused.stdout.startswith(f"ws-b on {b.name}: pause sent (by ")
        assert "after its running iteration" in paused.stdout
        noted = a.lk("note", "--repo", "ws-b", "use", "the staging database", ws=False)
        assert noted.returncode == 0, noted.stderr
        steer = b.ws / ".loopkit" / "control" / "steer.json"
        wait_until(steer.exists, 10, "the pause lands on b")
        assert json.loads(steer.read_text())["via"] == "cli"
        open_gate(b.ws)  # the running iteration finishes…
        loop.wait_state(status="paused", iteration=1)  # …and no next one starts
        assert gated_runs(b.ws) == ["1|"]

        def a_sees_it_paused() -> bool:
            row = ps(a)[(b.name, "ws-b")]
            return bool(row["state"] == "paused" and row["guidance_pending"] == 1)

        wait_until(a_sees_it_paused, 15, "a sees b's loop paused, with a note waiting")
        assert a.lk("resume", f"{b.name}:ws-b", ws=False).returncode == 0
        wait_until(lambda: len(gated_runs(b.ws)) == 2, 15, "iteration 2 on b after the resume")
        open_gate(b.ws)
        wait_until(lambda: len(gated_runs(b.ws)) == 3, 15, "iteration 3 on b")
        # The note reached exactly the next agent run, once.
        assert gated_runs(b.ws) == ["1|", "2|use the staging database", "3|"]
        wait_until(lambda: ps(a)[(b.name, "ws-b")]["pid"] == loop.proc.pid, 15, "b's pid")
        stopped = a.lk("stop", "ws-b", ws=False)
        assert stopped.returncode == 0, stopped.stderr
        assert loop.wait(15) == 143
    assert [row[:2] for row in orders(dsn)] == [
        ("pause", None), ("note", "use the staging database"), ("resume", None), ("stop", None),
    ]  # fmt: skip
    assert all(row[3] and row[4] == "applied" for row in orders(dsn))
    events = [
        json.loads(line) for line in (b.ws / ".loopkit" / "events.jsonl").read_text().splitlines()
    ]
    given = [e for e in events if e["event"].endswith("_given")]
    assert [e["event"] for e in given] == ["steer_pause_given", "guidance_given",
                                          "steer_resume_given", "steer_stop_given"]  # fmt: skip
    assert all(e["via"] == "cli" and e["given_on"] == a.name and e["by"] for e in given)
    assert {"steer_pause", "steer_resume", "steer_stop"} <= {e["event"] for e in events}


def test_orders_land_once_with_two_followers_on_the_machine(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    other = b.workspace("other")
    for ws in (b.ws, other):
        setup(ws, RESTING, verify="exit 0\n")
    assert b.lk("pause").returncode == 0  # ws-b holds its notes: no agent run takes them
    with Daemon(b.ws, env=b.env) as held, Daemon(other, env=b.env) as resting:
        held.wait_state(status="paused")
        resting.wait_state(status="running", iteration=1)
        wait_until(lambda: state_on(a, b, "ws-b") == "paused", 15, "a sees ws-b paused")
        for n in range(4):  # both of b's supervisors follow the fleet, and race for each
            assert a.lk("note", "--repo", "ws-b", f"note {n}", ws=False).returncode == 0
        wait_until(lambda: all(row[3] for row in orders(dsn)), 10, "every order applied")
        folder = b.ws / ".loopkit" / "control" / "notes"
        texts = sorted(json.loads(p.read_text())["text"] for p in folder.glob("*.json"))
        assert texts == [f"note {n}" for n in range(4)]
        assert not (other / ".loopkit" / "control" / "notes").exists()


def test_a_machine_not_heard_from_shows_its_loops_unknown_until_it_says_more(
    tmp_path: Path, dsn: str
) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    setup(b.ws, RESTING, verify="exit 0\n")
    with Daemon(b.ws, env=b.env) as loop:
        loop.wait_state(status="running", iteration=1)
        wait_until(lambda: state_on(a, b, "ws-b") == "running", 15, "a sees b's loop run")
        os.killpg(loop.proc.pid, signal.SIGKILL)  # b is gone without a last word
        loop.proc.wait(10)
    with psycopg.connect(dsn) as conn:  # …and ten minutes pass without a beat from it
        conn.execute("UPDATE loopkit_loops SET updated_at = now() - interval '10 minutes'")
    row = ps(a)[(b.name, "ws-b")]
    assert (row["state"], row["pid"]) == ("unknown", None)
    assert row["problem"].startswith(f"no word from {b.name} for 10m (it said running)")
    assert (
        "ws-b on " in a.lk("ps", ws=False).stdout and "no word from" in a.lk("ps", ws=False).stdout
    )
    assert "is not running (unknown)" in a.lk("stop", "ws-b", ws=False).stdout
    # b comes back: its serve publishes every loop of the machine, this one dead.
    with serving(b):
        wait_until(lambda: state_on(a, b, "ws-b") == "dead", 20, "b's serve says dead")


@contextlib.contextmanager
def serving(machine: Machine) -> Any:
    out = machine.root / f"serve-{machine.label}.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"],
            env=machine.env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_repo_two_machines_share_is_named_machine_colon_repo(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    for machine in (a, b):
        api = machine.workspace("api")
        setup(api, 'done = ["true"]', verify="exit 0\n")
        assert machine.lk("run", ws=api).returncode == 0
    wait_until(lambda: state_on(a, b, "api") == "finished", 10, "b's api in the fleet")
    both = a.lk("pause", "api", ws=False)
    assert both.returncode == 66
    assert "'api' names 2 loops on different machines; say which: " in both.stderr
    assert f"{a.name}:api" in both.stderr and f"{b.name}:api" in both.stderr
    unknown = a.lk("pause", "nosuch", ws=False)
    assert unknown.returncode == 66
    assert "no loop named 'nosuch' on this machine or in the fleet" in unknown.stderr
    assert f"api on {b.name}" in unknown.stderr
    theirs = a.lk("pause", f"{b.name}:api", ws=False)
    assert theirs.returncode == 0, theirs.stderr
    assert "from its next `loopkit run` there" in theirs.stdout
    mine = a.lk("pause", f"{a.name}:api", ws=False)
    assert mine.returncode == 0 and mine.stdout.startswith("api: paused")
    assert [row[:3] for row in orders(dsn)] == [("pause", None, "cli")]
    # b's next run lands the pause before its first iteration: it holds from the start.
    api_b = b.root / "b-repos" / "api"
    with Daemon(api_b, env=b.env) as loop:
        loop.wait_state(status="paused")
    assert orders(dsn)[0][3:] == (True, "applied")


def test_an_older_schema_leaves_loops_running_and_says_once_what_to_run(
    tmp_path: Path, pg_server: Any
) -> None:
    url = str(pg_server.new_database())
    with psycopg.connect(url, autocommit=True) as conn:  # a fleet `fleet init` made at 2
        conn.execute("CREATE TABLE loopkit_schema (version integer NOT NULL)")
        for version, statements in schema.MIGRATIONS[:2]:
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO loopkit_schema (version) VALUES (%s)", (version,))
    b = Machine(tmp_path, "b", url)
    setup(b.ws, 'done = ["true"]', verify="exit 0\n")
    done = b.lk("run", timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("run `loopkit fleet init`") == 1, done.stderr
    assert "unreachable" not in done.stderr
    rows = ps(b)
    assert rows[(None, "ws-b")]["state"] == "finished"


def test_steering_another_machine_s_loop_with_the_database_gone_says_so(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        nobody = f"postgresql://loopkit@127.0.0.1:{sock.getsockname()[1]}/gone"
    a = Machine(tmp_path, "a", nobody)
    for command in (("pause", "b-1:api"), ("note", "--repo", "api", "use staging")):
        done = a.lk(*command, ws=False)
        assert done.returncode == 1, done.stderr
        assert "cannot reach the fleet database to find " in done.stderr
        assert "no loop named" not in done.stderr
