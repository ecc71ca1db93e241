"""After a timeout: an expiry is final (SPEC: ``open → resolved | expired``), and every
answer that does count is applied once.

An ``abort`` timeout exits 3 and leaves the block standing; it takes no answer afterwards —
the human lifts the block to run again.
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


def test_an_expired_request_takes_no_answer_and_wait_says_expired(ws: Path) -> None:
    timeout_setup(ws, "abort")
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    [first] = records(ws)
    request_id = str(first["request_id"])
    late = lk(ws, "reply", "--request-id", request_id, "--reply", "A")
    assert late.returncode == 4
    assert "expired" in late.stderr and "loopkit unblock" in late.stderr  # what to do instead
    assert "first answer stands" not in late.stderr  # a timeout is not an answer
    waited = lk(ws, "requests", "wait", request_id)
    assert waited.returncode == 3 and json.loads(waited.stdout)["outcome"] == "expired"
    assert record(ws, request_id) == first  # untouched


def test_a_late_deferral_is_refused_too(ws: Path) -> None:
    write_config(ws, QUICK)
    asked = ask(ws, "-s", "Check the menu", "--kind", "review", "--prompt",
                "Is the menu easy to close?", "--timeout", "0.01", "--on-timeout", "abort",
                "--block", "--json")  # fmt: skip
    request_id = json.loads(asked.stdout)["request_id"]
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    assert lk(ws, "reply", "--request-id", request_id, "--reply", "defer").returncode == 4
    assert record(ws, request_id)["status"] == "expired"


def test_an_expired_gate_request_is_not_an_approval(ws: Path) -> None:
    write_config(ws, QUICK + "[escalation]\ntimeout_minutes = 0.01\n")
    assert lk(ws, "gate", "--", "touch", "x").returncode == 2
    [path] = files(ws)
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    assert lk(ws, "gate", "--", "touch", "x").returncode == 3
    assert lk(ws, "reply", "--request-id", path.stem, "--reply", "approve").returncode == 4
    assert not (ws / "x").exists()


def test_after_an_applied_abort_the_next_agent_gets_no_decision(ws: Path) -> None:
    setup(ws, "max_verify_failures = 1")
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    [first] = records(ws)
    assert lk(ws, "reply", "--request-id", str(first["request_id"]), "--reply", "C").returncode == 0
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    lk(ws, "run", "--exit-on-block", "--max-iterations", "1")
    assert [run[1] for run in runs(ws)] == ["", ""]  # LOOPKIT_DECISION: not "abort" again


def test_a_request_raised_late_times_out_from_when_it_was_raised(ws: Path) -> None:
    write_config(ws, QUICK)
    escalate = ("escalate", "--question", "Which payment flow?", "--context", "c",
                "--attempted", "a", "--choice", "Stripe — card")  # fmt: skip
    assert lk(ws, *escalate).returncode == 2
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json",
            "--timeout", "1", "--on-timeout", "abort"]  # fmt: skip
    joined = json.loads(ask(ws, *args).stdout)
    # It joined the open block long ago (the record is backdated, not slept on)...
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
