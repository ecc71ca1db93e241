"""kill -9 at every step of an escalation and of an answer, then a restart: nothing lost,
nothing sent or asked twice, nothing half-written.

The steps are held from outside, never by code put in loopkit for tests: the fake Bot API
holding ``sendMessage`` (the send in flight), the store's own ``flock`` held by the test
(before anything is written). The states between the file writes themselves are built by
``tests/escalation/test_repair.py``. Random kills sweeping across the whole run are the
``soak`` tests (``pytest -m soak``): the default suite keeps the deterministic ones.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

import pytest
from chaos import ESCALATE, SUPERVISED, Tally, _check, environment, fault_run

from fakeserver import FakeServer, Reply
from helpers import LOOPKIT, wait_until


def start(ws: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(LOOPKIT), "-C", str(ws), *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def run(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LOOPKIT), "-C", str(ws), *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def the_record(ws: Path) -> dict[str, object]:
    (path,) = (ws / "requests").glob("*.json")
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    "restart", [["status"], ["run", "--exit-on-block", "--max-iterations", "0"]]
)
def test_escalate_killed_mid_send_is_sent_once_more(
    ws: Path, tmp_path: Path, server: FakeServer, restart: list[str]
) -> None:
    env = environment(server, tmp_path / "home")
    server.queue("/sendMessage", Reply(hang=True))
    proc = start(ws, env, *ESCALATE)
    server.wait_for("/sendMessage", 1, timeout=30)
    proc.kill()
    proc.wait()
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\n')
    if restart[0] == "status":
        # A status shortly after cannot know the send is dead: it waits out the grace.
        run(ws, env, *restart)
        assert len(server.calls("/sendMessage")) == 1
        restart = ["run", "--exit-on-block", "--max-iterations", "0"]
    done = run(ws, env, *restart)
    assert done.returncode == 2, done.stderr
    assert len(server.calls("/sendMessage")) == 2
    delivery = the_record(ws)["delivery"]
    assert isinstance(delivery, list) and len(delivery) == 2
    assert delivery[0]["status"] == "interrupted" and delivery[1].get("repeat") is True
    again = run(ws, env, *restart)  # and never a third time
    assert again.returncode == 2 and len(server.calls("/sendMessage")) == 2


def test_escalate_killed_before_writing_leaves_nothing(
    ws: Path, tmp_path: Path, server: FakeServer
) -> None:
    env = environment(server, tmp_path / "home")
    locks = ws / ".loopkit" / "locks"
    locks.mkdir(parents=True)
    fd = os.open(locks / "requests.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # escalate waits for the store here
        proc = start(ws, env, *ESCALATE)
        wait_until(lambda: _waits_on_a_lock(proc.pid), 30, "escalate waiting on the store lock")
        proc.kill()
        proc.wait()
    finally:
        os.close(fd)
    assert not (ws / "BLOCKED.md").exists() and list((ws / "requests").glob("*.json")) == []
    assert run(ws, env, "check").returncode == 0


def _waits_on_a_lock(pid: int) -> bool:
    try:
        return "flock" in Path(f"/proc/{pid}/wchan").read_text() or "locks" in Path(
            f"/proc/{pid}/stack"
        ).read_text(errors="replace")
    except OSError:
        return False


def test_a_supervisor_killed_mid_send_asks_no_second_question(
    ws: Path, tmp_path: Path, server: FakeServer
) -> None:
    (ws / "loopkit.toml").write_text(SUPERVISED)
    env = environment(server, tmp_path / "home")
    server.queue("/sendMessage", Reply(hang=True))
    proc = start(ws, env, "run")
    server.wait_for("/sendMessage", 1, timeout=30)
    proc.kill()
    proc.wait()
    done = run(ws, env, "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    records = list((ws / "requests").glob("*.json"))
    assert len(records) == 1  # the restart stands on the block it left, asks nothing new
    assert len(server.calls("/sendMessage")) == 2  # the send cut short, once more


def test_a_reply_killed_while_it_waits_changes_nothing(
    ws: Path, tmp_path: Path, server: FakeServer
) -> None:
    env = environment(server, tmp_path / "home")
    assert run(ws, env, *ESCALATE).returncode == 2
    request_id = str(the_record(ws)["request_id"])
    before = (ws / "requests" / f"{request_id}.json").read_bytes()
    fd = os.open(ws / ".loopkit" / "locks" / "requests.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = start(ws, env, "reply", "--request-id", request_id, "--reply", "A")
        wait_until(lambda: _waits_on_a_lock(proc.pid), 30, "reply waiting on the store lock")
        proc.kill()
        proc.wait()
    finally:
        os.close(fd)
    assert (ws / "requests" / f"{request_id}.json").read_bytes() == before
    done = run(ws, env, "reply", "--request-id", request_id, "--reply", "A")
    assert done.returncode == 0 and the_record(ws)["status"] == "resolved"


@pytest.mark.soak
def test_random_kills_lose_and_double_nothing() -> None:
    """Three seeded kills of each kind (``pytest -m soak``, with the long variant)."""
    tallies = fault_run(str(LOOPKIT), rounds=3, seed=3)
    for kind, tally in tallies.items():
        assert (tally.lost, tally.doubled, tally.torn) == (0, 0, 0), (kind, tally.notes)
        assert tally.kills == 3


@pytest.mark.soak
def test_soak_many_random_kills() -> None:
    """The long variant: ``pytest -m soak`` (about 3 s a kill)."""
    tallies = fault_run(str(LOOPKIT), rounds=int(os.environ.get("LOOPKIT_SOAK_ROUNDS", "50")))
    total = Tally()
    for tally in tallies.values():
        total.add(tally)
    assert (total.lost, total.doubled, total.torn) == (0, 0, 0), total.notes


def test_the_tally_counts_what_it_claims_to(ws: Path, server: FakeServer) -> None:
    """The checker can fail: a saved question that is not the block, and a message sent more
    often than its record says, are counted."""
    (ws / "requests").mkdir()
    lost = {"request_id": "aaa111", "status": "open", "delivery": []}
    sent = {"request_id": "bbb222", "status": "open", "block": "joined", "joined_to": "x",
            "delivery": []}  # fmt: skip
    for record in (lost, sent):
        (ws / "requests" / f"{record['request_id']}.json").write_text(json.dumps(record))
    server.queue("/sendMessage", Reply())
    import httpx

    httpx.post(f"{server.url}/botX/sendMessage", json={"text": "bbb222"})
    tally = Tally()
    _check(ws, server, tally, questions=1)
    assert (tally.lost, tally.doubled) == (1, 1), tally.notes
