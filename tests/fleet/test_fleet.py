"""The fleet against a real PostgreSQL server: "machines" are separate LOOPKIT_HOMEs with
workspaces of their own, sharing one database (and, for the phone, one bot)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from fakeserver import FakeServer
from helpers import LOOPKIT, Daemon, clean_env, runs, setup, wait_until
from machines import Machine

TOKEN = "999999:AAFleetTokenNotARealOne_abcdefgh"


def test_init_makes_the_schema_from_nothing_and_is_idempotent(pg_server: Any) -> None:
    url = str(pg_server.new_database())
    env = clean_env(LOOPKIT_FLEET_DSN=url)
    lk = [str(LOOPKIT), "fleet"]
    first = subprocess.run([*lk, "init"], env=env, capture_output=True, text=True)
    assert first.returncode == 0 and "from version 0 to 3" in first.stdout, first.stderr
    again = subprocess.run([*lk, "init"], env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    status = subprocess.run([*lk, "status", "--json"], env=env, capture_output=True, text=True)
    info = json.loads(status.stdout)
    assert info["schema_version"] == 3 and info["machines"] == [] and info["leases"] == []


def test_both_machines_requests_are_in_one_inbox(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    mine, theirs = a.escalate("Mine?"), b.escalate("Theirs?")
    rows = json.loads(a.lk("inbox", "--json", ws=False).stdout)
    by_id = {row["request_id"]: row for row in rows}
    assert set(by_id) == {mine, theirs}
    assert by_id[mine]["machine"] is None and by_id[theirs]["machine"]
    assert "(on " in a.lk("inbox", ws=False).stdout


def test_a_reply_on_one_machine_resumes_the_loop_on_another(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    setup(b.ws, "max_verify_failures = 1")
    with Daemon(b.ws, env=b.env) as loop:
        loop.wait_state(status="blocked")
        request_id = loop.state()["open_request"]
        done = a.lk("reply", "--request-id", str(request_id), "--reply", "A", "--by", "ana")
        assert done.returncode == 0, done.stderr
        wait_until(lambda: len(runs(b.ws)) >= 2, 10, "the loop on b runs again")
        resolution = b.record(str(request_id))["resolution"]
        assert (resolution["by"], resolution["via"]) == ("ana", "cli")
        assert runs(b.ws)[1][1] != ""  # the decision reached b's next agent run


def test_a_dismissal_on_one_machine_lifts_the_block_on_another(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    setup(b.ws, "max_verify_failures = 1")
    with Daemon(b.ws, env=b.env) as loop:
        loop.wait_state(status="blocked")
        request_id = str(loop.state()["open_request"])
        done = a.lk("dismiss", request_id, "--by", "ana", "--reason", "stale")
        assert done.returncode == 0, done.stderr
        assert done.stderr.startswith(f"request {request_id} dismissed on ")
        wait_until(lambda: len(runs(b.ws)) >= 2, 10, "the loop on b runs again")
        after = b.record(request_id)
        assert after["status"] == "dismissed"
        assert (after["resolution"]["by"], after["resolution"]["reason"]) == ("ana", "stale")
        assert runs(b.ws)[1][1] == ""  # a dismissal hands b's next agent run no decision
    again = a.lk("dismiss", request_id)
    assert again.returncode == 4 and "was dismissed by ana" in again.stderr
    assert a.lk("reply", "--request-id", request_id, "--reply", "A").returncode == 4


def test_eight_concurrent_replies_across_machines_make_one_answer(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    request_id = b.escalate()
    codes: list[int] = []
    lock = threading.Lock()

    def reply(machine: Machine, n: int) -> None:
        done = machine.lk(
            "reply", "--request-id", request_id, "--reply", "AB"[n % 2], "--by", f"human-{n}"
        )
        with lock:
            codes.append(done.returncode)

    threads = [threading.Thread(target=reply, args=((a, b)[n % 2], n)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [0] + [4] * 7, codes
    import psycopg

    with psycopg.connect(dsn) as conn:
        (status,) = conn.execute(
            "SELECT status FROM loopkit_requests WHERE request_id = %s", (request_id,)
        ).fetchone()
    assert status == "resolved"


def loops_sharing_a_bot(tmp_path: Path, dsn: str, server: FakeServer) -> tuple[Machine, Machine]:
    """Two machines, each with a loop that blocks at its first verify, one bot for both."""
    phone = {
        "LOOPKIT_HITL_CHANNEL": "telegram",
        "LOOPKIT_HITL_TELEGRAM_TOKEN": TOKEN,
        "LOOPKIT_HITL_TELEGRAM_CHAT": "42",
        "LOOPKIT_HITL_TELEGRAM_API": server.url,
    }
    a, b = Machine(tmp_path, "a", dsn, **phone), Machine(tmp_path, "b", dsn, **phone)
    for machine in (a, b):
        setup(machine.ws, "max_verify_failures = 1")
    return a, b


def test_taps_on_a_shared_bot_land_in_the_loop_that_asked(
    tmp_path: Path, dsn: str, server: FakeServer
) -> None:
    a, b = loops_sharing_a_bot(tmp_path, dsn, server)
    with Daemon(a.ws, env=a.env) as loop_a, Daemon(b.ws, env=b.env) as loop_b:
        for loop in (loop_a, loop_b):
            loop.wait_state(status="blocked")
        server.wait_for("/getUpdates", 1, timeout=20)
        request_id = str(loop_b.state()["open_request"])
        # The message the phone shows for b's question, as b recorded it when it was sent.
        (message_id,) = [e["message_id"] for e in b.record(request_id)["delivery"] if e["ok"]]
        server.push_update(
            callback_query={
                "id": "cb1",
                "from": {"id": 7, "first_name": "Ana"},
                "data": f"{request_id}:0",
                "message": {"message_id": message_id, "chat": {"id": 42}, "text": "x"},
            }
        )
        wait_until(lambda: len(runs(b.ws)) >= 2, 15, "b resumes on the tap")
        assert len(runs(a.ws)) == 1  # a's loop still waits on its own question
        assert b.record(request_id)["resolution"]["via"] == "telegram"


def lease_holders(machine: Machine) -> list[str]:
    done = machine.lk("fleet", "status", "--json")
    return list(json.loads(done.stdout)["leases"]) if done.returncode == 0 else []


def test_the_bot_lease_fails_over_within_5_s_after_a_kill(
    tmp_path: Path, dsn: str, server: FakeServer
) -> None:
    a, b = loops_sharing_a_bot(tmp_path, dsn, server)
    with Daemon(a.ws, env=a.env) as loop_a:
        loop_a.wait_state(status="blocked")
        wait_until(lambda: lease_holders(a), 20, "a holds the bot's lease")
        with Daemon(b.ws, env=b.env) as loop_b:
            loop_b.wait_state(status="blocked")
            (holder,) = lease_holders(b)
            os.killpg(loop_a.proc.pid, signal.SIGKILL)
            loop_a.proc.wait(10)
            wait_until(
                lambda: lease_holders(b) and lease_holders(b) != [holder],
                5,
                "b takes the lease within 5 s",
            )


def test_the_database_going_away_loses_nothing(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from pgserver import PgServer

    pg = PgServer()
    pg.start()
    try:
        url = pg.new_database()
        a = Machine(tmp_path, "a", url)
        assert a.lk("fleet", "init").returncode == 0
        pg.stop()
        down = a.lk("escalate", "-q", "Still asked?", "-c", "c", "-a", "a", "--choice", "Go — on")
        assert down.returncode == 2 and (a.ws / "BLOCKED.md").exists()
        assert down.stderr.count("fleet database unreachable") == 1
        request_id = next((a.ws / "requests").glob("*.json")).stem
        pg.start()
        setup(a.ws, "max_verify_failures = 1")
        with Daemon(a.ws, env=a.env) as loop:  # its follower catches up
            loop.wait_state(status="blocked")
            import psycopg

            def synced() -> bool:
                with psycopg.connect(url) as conn:
                    return bool(
                        conn.execute(
                            "SELECT 1 FROM loopkit_requests WHERE request_id = %s", (request_id,)
                        ).fetchone()
                    )

            wait_until(synced, 15, "the request reaches the database")
    finally:
        pg.stop(remove=True)


def test_without_psycopg_a_dsn_is_one_config_error(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from loopkit import config
    from loopkit.errors import ConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"pip install 'loopkit\[fleet\]'"):
        config.load(ws, {"LOOPKIT_FLEET_DSN": "postgresql://loopkit@db/x"})
    assert config.load(ws, {}).channels.fleet_dsn is None


def test_doctor_says_whether_the_fleet_is_ready(tmp_path: Path, pg_server: Any) -> None:
    url = str(pg_server.new_database())
    a = Machine(tmp_path, "a", url)
    assert "run `loopkit fleet init`" in a.lk("doctor").stdout
    assert a.lk("fleet", "init").returncode == 0
    assert "the fleet database is reachable (schema version 3)" in a.lk("doctor").stdout
    gone = Machine(tmp_path, "b", "postgresql://loopkit:pw@127.0.0.1:1/none")
    said = gone.lk("doctor")
    assert "the fleet database is unreachable" in said.stdout and "pw" not in said.stdout


def test_status_before_init_says_to_run_it(tmp_path: Path, pg_server: Any) -> None:
    a = Machine(tmp_path, "a", str(pg_server.new_database()))
    said = a.lk("fleet", "status")
    assert said.returncode == 78 and "run `loopkit fleet init`" in said.stderr


# --- the fleet as a newcomer meets it (SPEC section 15) -----------------------------------


def test_inbox_on_a_machine_without_a_workspace_lists_the_fleet(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    theirs = b.escalate("Theirs?")
    plain = tmp_path / "plain"
    plain.mkdir()
    fresh = Machine(tmp_path, "fresh", dsn)  # a LOOPKIT_HOME with no workspace registered
    done = subprocess.run(
        [str(LOOPKIT), "inbox", "--json"],
        cwd=plain, env=fresh.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [row["request_id"] for row in rows] == [theirs]
    assert rows[0]["machine"]
    assert not (plain / ".loopkit").exists()
    assert a.home != fresh.home


def test_a_reply_from_a_plain_folder_leaves_nothing_there(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    request_id = b.escalate()
    plain = tmp_path / "plain"
    plain.mkdir()
    done = subprocess.run(
        [str(LOOPKIT), "reply", "--request-id", request_id, "--reply", "A", "--by", "ana"],
        cwd=plain, env=a.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["chosen_option"] == "keep"
    assert list(plain.iterdir()) == [], "reply made the plain folder a workspace"
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT status FROM loopkit_requests WHERE request_id = %s", (request_id,)
        ).fetchone()
    assert row == ("resolved",)


def test_fleet_status_lists_a_machine_that_only_escalated(tmp_path: Path, dsn: str) -> None:
    a, b = Machine(tmp_path, "a", dsn), Machine(tmp_path, "b", dsn)
    b.escalate()  # b never runs a supervisor or serve: it only asked
    done = a.lk("fleet", "status", "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    b_machine = b.lk("fleet", "status", "--json")
    this_b = json.loads(b_machine.stdout)["this_machine"]
    assert this_b in [seen["machine"] for seen in info["machines"]]
    assert info["open"] == {this_b: 1}
