"""A request's timeout under ``loopkit run``: each timeout action, and an expiry is final (SPEC:
``open → resolved | expired``).

An ``abort`` timeout exits 3 and leaves the block standing; it takes no answer afterwards —
the human lifts the block to run again."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import (
    Daemon,
    ask,
    files,
    lk,
    loopkit,
    record,
    records,
    runs,
    setup,
    wait_until,
    write_config,
)

QUICK = '[loop]\nagent = "true"\nverify = "exit 0"\npause = "1s"\n'


def timeout_setup(ws: Path, action: str) -> None:
    setup(ws, f'task_file = "PLAN.md"\n[escalation]\ntimeout_minutes = 0.004\n'
              f'timeout_action = "{action}"')  # fmt: skip
    (ws / "PLAN.md").write_text("- [ ] first task\n- [ ] second task\n")


def test_timeout_abort_exits_3_and_keeps_the_block(ws: Path) -> None:
    timeout_setup(ws, "abort")
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    assert (ws / "BLOCKED.md").exists()
    [record] = records(ws)
    assert record["status"] == "expired"
    assert record["resolution"]["by"] == "timeout"  # type: ignore[index]
    assert record["resolution"]["action"] == "abort"  # type: ignore[index]


def test_timeout_skip_moves_on_to_the_next_task(ws: Path) -> None:
    timeout_setup(ws, "skip")
    with Daemon(ws, "--max-iterations", "6") as daemon:
        assert daemon.wait() == 0
    status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
    assert [s["task"] for s in status["skipped_tasks"]] == ["first task", "second task"]
    assert [r[2] for r in runs(ws)] == ["first task"] * 3 + ["second task"] * 3
    first, second = records(ws)
    assert first["status"] == second["status"] == "expired"
    assert first["resolution"]["by"] == "timeout"  # type: ignore[index]
    assert all(r[1] == "" for r in runs(ws))  # a timeout is never a human's decision


def test_timeout_retry_continues_on_the_same_task(ws: Path) -> None:
    timeout_setup(ws, "retry")
    with Daemon(ws, "--max-iterations", "6") as daemon:
        assert daemon.wait() == 0
    assert [r[2] for r in runs(ws)] == ["first task"] * 6
    assert [r["status"] for r in records(ws)] == ["expired", "expired"]


def test_timeout_queue_keeps_waiting(ws: Path) -> None:
    timeout_setup(ws, "queue")
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        wait_until(lambda: records(ws)[0].get("timed_out_at"), what="the timeout to pass")
        assert records(ws)[0]["status"] == "open"
        assert (ws / "BLOCKED.md").exists() and len(runs(ws)) == 3
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)


def test_a_timeout_abort_keeps_the_block_across_a_restart(ws: Path) -> None:
    timeout_setup(ws, "abort")
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        assert len(runs(ws)) == 3 and (ws / "BLOCKED.md").exists()
        # An expiry is final: the answer in the morning is refused, said so, nothing changed.
        late = loopkit("-C", str(ws), "unblock", "--reply", "B")
        assert late.returncode == 4 and "expired" in late.stderr, late.stderr
        assert (ws / "BLOCKED.md").exists()
        # Lifting the block is what resumes the loop, its counters afresh.
        assert loopkit("-C", str(ws), "unblock").returncode == 0
        assert daemon.wait() == 3  # three more failures, a new block, nobody answers it
    assert len(runs(ws)) == 6
    [first, _] = records(ws)
    assert first["status"] == "expired" and first["resolution"]["by"] == "timeout"  # type: ignore[index]
    assert runs(ws)[3][1] == ""  # no decision reached the agent: nobody made one


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
