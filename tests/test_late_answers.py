"""After a timeout: which answers still count, and that each is applied once.

An ``abort`` timeout exits 3 and leaves the block standing, so the human's answer in the
morning still counts — but only while that block stands, and never twice.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_cli_ask import ask, files, record
from test_supervisor import records, runs, setup, timeout_setup

from helpers import Daemon, loopkit, write_config

QUICK = '[loop]\nagent = "true"\nverify = "exit 0"\npause = "1s"\n'


def lk(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), *args)


def test_no_late_answer_once_the_block_is_lifted(ws: Path) -> None:
    timeout_setup(ws, "abort")
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    [first] = records(ws)
    with Daemon(ws, "--max-iterations", "1") as daemon:
        daemon.wait_state(status="blocked")
        (ws / "BLOCKED.md").unlink()  # the human lifts the block instead of answering
        daemon.wait_state(status="running")
    request_id = str(first["request_id"])
    late = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "A")
    assert late.returncode == 4, late.stdout  # nobody would act on it now
    assert record(ws, request_id)["status"] == "expired"
    waited = loopkit("-C", str(ws), "requests", "wait", request_id)
    assert waited.returncode == 3 and "expired" in waited.stdout


def test_a_late_deferral_is_refused_and_the_timeout_record_kept(ws: Path) -> None:
    write_config(ws, QUICK)
    asked = ask(ws, "-s", "Check the menu", "--kind", "review", "--prompt",
                "Is the menu easy to close?", "--timeout", "0.01", "--on-timeout", "abort",
                "--block", "--json")  # fmt: skip
    request_id = json.loads(asked.stdout)["request_id"]
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    deferred = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "defer")
    assert deferred.returncode == 4
    assert record(ws, request_id)["status"] == "expired"
    approved = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "approve")
    assert approved.returncode == 0, approved.stderr
    final = record(ws, request_id)
    assert final["resolution"]["late"] is True  # type: ignore[index]
    assert final["expired_resolution"]["by"] == "timeout"  # type: ignore[index]


def test_a_used_gate_approval_takes_no_late_answer(ws: Path) -> None:
    write_config(ws, QUICK + "[escalation]\ntimeout_minutes = 0.01\n")
    assert lk(ws, "gate", "--", "touch", "x").returncode == 2
    [path] = files(ws)
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    assert lk(ws, "gate", "--", "touch", "x").returncode == 3
    late = loopkit("-C", str(ws), "reply", "--request-id", path.stem, "--reply", "approve")
    assert late.returncode == 4  # that request is used up: a new run asks anew
    assert not (ws / "x").exists()


def test_after_an_applied_abort_the_next_agent_gets_no_decision(ws: Path) -> None:
    setup(ws, "max_verify_failures = 1")
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    [first] = records(ws)
    reply = ("reply", "--request-id", str(first["request_id"]), "--reply", "C")
    assert lk(ws, *reply).returncode == 0
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    lk(ws, "run", "--exit-on-block", "--max-iterations", "1")
    assert [run[1] for run in runs(ws)] == ["", ""]  # LOOPKIT_DECISION: not "abort" again


def test_a_request_raised_late_times_out_from_when_it_was_raised(ws: Path) -> None:
    write_config(ws, QUICK)
    assert lk(ws, "escalate", "--question", "Which payment flow?", "--context", "c",
              "--attempted", "a", "--choice", "Stripe — card").returncode == 2  # fmt: skip
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json",
            "--timeout", "1", "--on-timeout", "abort"]  # fmt: skip
    joined = json.loads(ask(ws, *args).stdout)
    # It joined the open block an hour ago (the record is backdated, not slept on)...
    path = ws / "requests" / f"{joined['request_id']}.json"
    data = json.loads(path.read_text())
    data["created_at"] = "2026-01-01T00:00:00Z"
    path.write_text(json.dumps(data))
    assert lk(ws, "unblock", "--reply", "A").returncode == 0
    assert ask(ws, *args).returncode == 2  # ...and is asked only now, as its own block
    assert joined["request_id"] in (ws / "BLOCKED.md").read_text()
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", open_request=joined["request_id"])
        assert record(ws, joined["request_id"])["status"] == "open"  # its minute runs now
