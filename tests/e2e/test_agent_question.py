"""SPEC §16, end to end: the agent's question reaches the phone at once. A real ``loopkit
run`` whose agent runs ``loopkit escalate`` (inside its session, without the bot's token)
and then goes on with its turn; the fake Bot API on 127.0.0.1 gets the message within a
second of BLOCKED.md's creation, and the record holds no failed attempt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakeserver import FakeServer
from helpers import ESCALATE, LOOPKIT, Daemon, phone_env, wait_until, write_config

# The agent asks, then works on for a minute: its turn does not end with the question.
AGENT = f"""\
import subprocess, time
code = subprocess.call([{str(LOOPKIT)!r}, *{ESCALATE!r}])
open("escalated", "w").write(str(code))
time.sleep(60)
"""


def test_the_agents_question_reaches_the_phone_within_a_second(
    ws: Path, server: FakeServer
) -> None:
    (ws / "agent.py").write_text(AGENT)
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\niteration_timeout = "5m"\n'
        '[escalation]\nchannel = "telegram"\n',
    )
    with Daemon(ws, env=phone_env(server)) as daemon:
        [sent] = server.wait_for("/sendMessage", timeout=15)
        blocked_at = (ws / "BLOCKED.md").stat().st_mtime  # written, then linked into place
        assert sent.at - blocked_at <= 1.0, f"sent {sent.at - blocked_at:.2f} s after the block"
        [path] = (ws / "requests").glob("*.json")
        record = wait_until(lambda: (r := json.loads(path.read_text()))["delivery"][-1]["ok"] and r)
        told = "(telegram: the supervisor sends it)"  # escalate's last line, echoed
        wait_until(lambda: told in daemon.stdout(), what="escalate's output")
        # escalate has printed; its exit (and the agent's note of it) follows a moment later
        wait_until((ws / "escalated").exists, what="escalate to return to the agent")
        assert daemon.proc.poll() is None  # the agent's turn goes on meanwhile
    assert isinstance(record, dict) and record["raised_by"] == "agent"
    assert [(e["channel"], e["ok"]) for e in record["delivery"]] == [("telegram", True)]
    assert sent.body["text"].splitlines()[1] == "Q: Which flow?"
    assert (ws / "escalated").read_text() == "2"
