"""SPEC §9, end to end: every block reaches a human — adopted files, subfolders, failed
sends retried by the waiting daemon, a ladder, restarts in the backoff, reminders."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from fakeserver import FakeServer, Reply
from helpers import Daemon, clean_env, loopkit, wait_until, write_config

SEED_FILE = """# Blocked

## Question:
Which payment provider should checkout use?

## Context:
Feature: checkout. File: app/pay.py.

## Attempted:
- read PROMPT.md: it names both

## Choices:
- A) Stripe — keeps the current SDK
- B) Adyen — needs a new contract
"""


def slack_env(server: FakeServer, **extra: str) -> dict[str, str]:
    return clean_env(
        LOOPKIT_HITL_CHANNEL="slack", LOOPKIT_HITL_SLACK_WEBHOOK=f"{server.url}/hook", **extra
    )


def loop(ws: Path, agent: str, extra: str = "") -> None:
    (ws / "agent.py").write_text(agent)
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n'
        f'iteration_timeout = "30s"\n[escalation]\n{extra}\n',
    )


def the_record(ws: Path) -> dict[str, Any]:
    found = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    assert len(found) == 1, found
    return found[0]


def test_a_hand_written_block_is_adopted_left_as_written_and_sent(
    ws: Path, server: FakeServer
) -> None:
    seed = SEED_FILE.replace("\n", "\\n")
    loop(ws, f'open("BLOCKED.md", "w").write("{seed}")\nraise SystemExit(2)\n')
    done = loopkit("-C", str(ws), "run", "--exit-on-block", env=slack_env(server))
    assert done.returncode == 2, done.stderr
    assert (ws / "BLOCKED.md").read_text() == SEED_FILE  # byte for byte
    record = the_record(ws)
    assert record["trigger"] == "agent-file" and record["block"] == "adopted"
    assert record["prompt"] == "Which payment provider should checkout use?"
    assert [o["label"] for o in record["options"]] == ["Stripe", "Adyen"]
    [sent] = server.calls("/hook")
    lines = sent.body["text"].splitlines()
    assert len(lines) == 5 and lines[1] == "Q: Which payment provider should checkout use?"
    assert lines[4] == "Choices: A) Stripe | B) Adyen"
    # Answered from a terminal, the agent's file goes and the next run gets the decision.
    answered = loopkit("-C", str(ws), "unblock", "--reply", "B", env=slack_env(server))
    assert answered.returncode == 0, answered.stderr
    assert not (ws / "BLOCKED.md").exists()


def test_a_block_nobody_ran_is_a_human_pause_and_sends_nothing(
    ws: Path, server: FakeServer
) -> None:
    loop(ws, "print('never runs')\n")
    (ws / "BLOCKED.md").write_text("# Blocked\nback after lunch\n")
    done = loopkit("-C", str(ws), "run", "--exit-on-block", env=slack_env(server))
    assert done.returncode == 2
    assert server.calls("/hook") == [] and not (ws / "requests").exists()
    assert "a human's pause" in done.stderr


def test_an_agent_in_a_subfolder_blocks_the_workspace(ws: Path) -> None:
    (ws / "src").mkdir()
    loopkit_bin = Path(sys.executable).parent / "loopkit"
    loop(
        ws,
        "import os, subprocess\nos.chdir('src')\n"
        f"raise SystemExit(subprocess.call([{str(loopkit_bin)!r}, 'escalate', '-q', 'Which?', "
        "'-c', 'ctx', '-a', 'tried', '--choice', 'A — a']))\n",
    )
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    assert (ws / "BLOCKED.md").is_file() and not (ws / "src" / "BLOCKED.md").exists()
    assert len(list((ws / "requests").glob("*.json"))) == 1
    assert not (ws / "src" / "requests").exists()


def test_a_failing_slack_is_retried_by_the_waiting_daemon(ws: Path, server: FakeServer) -> None:
    server.queue("/hook", *(Reply(500, "internal_error") for _ in range(3)))
    loop(
        ws,
        "open('BLOCKED.md', 'w').write('## Question:\\nProceed?\\n')\n",
        'retry_backoff = "100ms"',
    )
    with Daemon(ws, env=slack_env(server)) as daemon:
        wait_until(lambda: len(server.calls("/hook")) >= 4, 20, "four tries")
        record = wait_until(lambda: (r := the_record(ws))["delivery"][-1]["ok"] and r, 10)
        assert isinstance(record, dict)
        oks = [(e["ok"], e["status"]) for e in record["delivery"]]
        assert oks == [(False, 500), (False, 500), (False, 500), (True, 200)]
        status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
        assert status["state"] == "blocked" and status["supervisor"] == "running"
        assert status["deliveries"] == [
            {"channel": "slack", "ok": True, "at": record["delivery"][-1]["at"], "status": 200,
             "error": None}
        ]  # fmt: skip
        assert status["blocked_since"] and status["timeout_action"] == "queue"
        assert status["deadline"] and status["next_send"] is None
        daemon.stop()


def test_a_ladder_moves_on_from_a_404_at_once(ws: Path, server: FakeServer, tmp_path: Path) -> None:
    server.queue("/hook", Reply(404, "no_service"))
    out = tmp_path / "dialled.txt"
    dial = f"{sys.executable} -c \"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())\""
    env = {**slack_env(server), "LOOPKIT_HITL_CHANNEL": "slack,dial", "LOOPKIT_HITL_DIAL_CMD": dial}
    done = loopkit("-C", str(ws), "escalate", "-q", "Which?", "-c", "c", "-a", "a",
                   "--choice", "A — a", env=env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert out.read_text().startswith("[loopkit] blocked in ws on ")
    entries = the_record(ws)["delivery"]
    assert [(e["channel"], e["ok"], e["status"]) for e in entries] == [
        ("slack", False, 404), ("dial", True, 0)
    ]  # fmt: skip


def test_a_restart_in_the_backoff_keeps_the_schedule(ws: Path, server: FakeServer) -> None:
    server.queue("/hook", Reply(400, "invalid_payload"))  # soft for nobody: hard, one rung
    loop(ws, "open('BLOCKED.md', 'w').write('## Question:\\nGo?\\n')\n", 'retry_backoff = "2s"')
    with Daemon(ws, env=slack_env(server)) as first:
        wait_until(lambda: server.calls("/hook"), 10, "the first try")
        wait_until(lambda: the_record(ws)["delivery"][-1]["ok"] is False, 10)
        os.killpg(first.proc.pid, signal.SIGKILL)
        first.proc.wait(10)
    failed_at = time.monotonic()
    with Daemon(ws, env=slack_env(server)):
        wait_until(lambda: len(server.calls("/hook")) == 2, 10, "the scheduled retry")
        waited = time.monotonic() - failed_at
        wait_until(lambda: the_record(ws)["delivery"][-1]["ok"] is not None, 10)
        entries = the_record(ws)["delivery"]
        assert [(e["ok"], e["status"]) for e in entries] == [(False, 400), (True, 200)]
        assert waited >= 1.0  # the retry came at its time, not at the restart
    assert len(server.calls("/hook")) == 2  # not lost, not doubled


def test_reminders_come_every_remind_every_up_to_max(ws: Path, server: FakeServer) -> None:
    loop(ws, "open('BLOCKED.md', 'w').write('## Question:\\nShip it?\\n')\n",
         'remind_every = "300ms"\nmax_reminders = 2')  # fmt: skip
    with Daemon(ws, env=slack_env(server)):
        calls = wait_until(lambda: (c := server.calls("/hook")) and len(c) >= 3 and c, 15)
        assert isinstance(calls, list)
        texts = [c.body["text"] for c in calls]
        assert texts[0].startswith("[loopkit] blocked in ws")
        assert all(t.startswith("[loopkit] still blocked in ws for ") for t in texts[1:])
        assert texts[1].endswith(": Ship it?")
        wait_until(lambda: sum(1 for e in the_record(ws)["delivery"] if e.get("reminder")) == 2)
    assert len(server.calls("/hook")) == 3  # max_reminders: two, then quiet


def test_resend_sends_the_open_block_again(ws: Path, server: FakeServer) -> None:
    assert loopkit("-C", str(ws), "resend").returncode == 66
    env = slack_env(server)
    loopkit("-C", str(ws), "escalate", "-q", "Which?", "-c", "c", "-a", "a", "--choice", "A — a",
            env=env)  # fmt: skip
    again = loopkit("-C", str(ws), "resend", env=env)
    assert again.returncode == 0, again.stderr
    assert len(server.calls("/hook")) == 2
    server.queue("/hook", Reply(500, "x"), Reply(500, "x"))
    assert loopkit("-C", str(ws), "resend", env=env).returncode == 1


def test_a_block_whose_record_breaks_is_asked_again_once_and_its_first_message_answers(
    ws: Path, server: FakeServer
) -> None:
    """SPEC §28: a BLOCKED.md whose marker names a record that cannot be read is asked again
    from its sections — once, across a supervisor's restart — and a tap on the first
    message (its request id) answers the block asked in its place."""
    loop(ws, "import os\nopen('decided.txt', 'w').write(os.environ.get('LOOPKIT_DECISION', ''))\n")
    asked = loopkit(
        "-C", str(ws), "escalate", "-q", "Ship the migration?", "-c", "db/0002.sql",
        "-a", "ran it on a copy", "--choice", "Ship it", "--choice", "Hold it",
        env=slack_env(server),
    )  # fmt: skip
    assert asked.returncode == 2, asked.stderr
    first = the_record(ws)["request_id"]
    assert len(server.calls("/hook")) == 1
    (ws / "requests" / f"{first}.json").write_text("{broken")  # the record cannot be read

    def replacement() -> dict[str, Any] | None:
        for path in (ws / "requests").glob("*.json"):
            try:
                data = json.loads(path.read_text())
            except ValueError:
                continue
            if data.get("replaces") == first:  # a field of its own in the record
                return data
        return None

    with Daemon(ws, env=slack_env(server)) as daemon:
        again = wait_until(replacement, 20, "the block asked again")
        assert isinstance(again, dict)
        daemon.wait_state(status="blocked", open_request=again["request_id"])
        wait_until(lambda: len(server.calls("/hook")) == 2, 10, "the second send")
        os.killpg(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(10)
    assert f"<!-- loopkit request: {again['request_id']} -->" in (ws / "BLOCKED.md").read_text()
    with Daemon(ws, env=slack_env(server)) as daemon:
        daemon.wait_state(status="blocked", open_request=again["request_id"])
        # The first message's button carries the first id: it answers the block.
        tapped = loopkit("-C", str(ws), "reply", "--request-id", first, "--reply", "A",
                         env=slack_env(server))  # fmt: skip
        assert tapped.returncode == 0, tapped.stderr
        wait_until(lambda: (ws / "decided.txt").exists(), 20, "the agent's next run")
    assert "ship" in (ws / "decided.txt").read_text().lower()
    assert len(server.calls("/hook")) == 2  # asked again once, not at every restart
    assert len([p for p in (ws / "requests").glob("*.json")]) == 2


def test_an_adopted_block_whose_record_breaks_is_asked_again_not_taken_for_a_pause(
    ws: Path, server: FakeServer
) -> None:
    """The agent's own BLOCKED.md (no marker), adopted and sent; its record then breaks and
    the supervisor restarts: the file is asked again once — never a human's silent pause."""
    seed = SEED_FILE.replace("\n", "\\n")
    loop(ws, f'import os\nif not os.environ.get("LOOPKIT_DECISION"):\n'
             f'    open("BLOCKED.md", "w").write("{seed}")\n')  # fmt: skip
    with Daemon(ws, env=slack_env(server)) as daemon:
        wait_until(lambda: len(server.calls("/hook")) == 1, 20, "the adopted block sent")
        adopted = daemon.wait_state(status="blocked")["open_request"]
        os.killpg(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(10)
    (ws / "requests" / f"{adopted}.json").write_text("{broken")
    for _ in range(2):  # asked again at the first restart, not again at the second
        with Daemon(ws, env=slack_env(server)) as daemon:
            # "waiting" is said once the block is decided and sent (or found sent already)
            wait_until(lambda: "waiting for an answer" in daemon.stderr(), 20, "the wait")
            assert "human's pause" not in daemon.stderr()
            os.killpg(daemon.proc.pid, signal.SIGKILL)
            daemon.proc.wait(10)
        assert len(server.calls("/hook")) == 2
    records = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")
               if p.stem != adopted]  # fmt: skip
    assert [r.get("replaces") for r in records] == [adopted]
