"""Answering from Slack, end to end: ``loopkit run`` + a fake Slack on 127.0.0.1 (Web API
and Socket Mode): one click, and the loop resumes with the decision, exactly once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeslack import CHANNEL_ID, FakeSlack
from helpers import Daemon, clean_env, loopkit, runs_file, wait_until, write_config


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    try:
        yield fake
    finally:
        fake.close()


def setup(ws: Path) -> None:
    (ws / "agent.sh").write_text(
        'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}" >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
    )
    (ws / "PLAN.md").write_text("- [ ] the first task\n- [ ] the second task\n")
    write_config(
        ws,
        '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "exit 1"\npause = "0s"\n'
        'task_file = "PLAN.md"\n[escalation]\nchannel = "slack"\nslack_mode = "socket"\n',
    )


def test_a_click_resumes_the_loop_within_a_second(ws: Path, slack: FakeSlack) -> None:
    setup(ws)
    env = clean_env(**slack.env(LOOPKIT_HITL_SLACK_ALLOWED_USERS="U0ANA"))
    with Daemon(ws, env=env) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        [post] = slack.called("chat.postMessage")
        value = post.body["blocks"][1]["elements"][0]["value"]
        request_id = value.rpartition(":")[0]
        wait_until(lambda: slack.open_links() == 1, 10, "the supervisor listens")
        ts = next(ts for (channel, ts), m in slack.messages.items() if m.get("blocks"))
        slack.click("U0BOB", ts, 2, name="bob")  # a stranger first: decides nothing
        started = time.monotonic()
        slack.click("U0ANA", ts, 0)
        daemon.wait_state(status="running", iteration=4)
        resumed = time.monotonic() - started
        assert resumed < 1.0, resumed
        last = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
        assert last["via"] == "slack" and last["by"] == "U0ANA (ana)"
        wait_until(lambda: slack.called("chat.update"), 5, "the message updated")
        blocks = slack.messages[(CHANNEL_ID, ts)]["blocks"]
        assert "Resolved: Retry with a hint — by ana" in blocks[-1]["text"]["text"]
        assert all(b["type"] == "section" for b in blocks)
        daemon.wait_state(status="blocked", iteration=6)
        runs = runs_file(ws).read_text().splitlines()
        assert runs[3] == "4|retry" and [r.split("|")[1] for r in runs].count("retry") == 1
        record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
        assert record["resolution"]["by_id"] == "U0ANA"
        # A block answered elsewhere (a terminal) loses its buttons on Slack too.
        [second] = [m for m in slack.called("chat.postMessage")[1:] if m.body.get("blocks")]
        other = second.body["blocks"][1]["elements"][0]["value"].rpartition(":")[0]
        reply = ["-C", str(ws), "reply", "--request-id", other, "--reply", "B"]
        assert loopkit(*reply, env=clean_env()).returncode == 0
        wait_until(lambda: len(slack.called("chat.update")) == 2, 10, "the second updated")
        assert slack.called("chat.update")[1].body["ts"] != ts


def test_a_bare_escalate_is_answered_by_a_click_through_serve(
    ws: Path, slack: FakeSlack, tmp_path: Path
) -> None:
    import os
    import re
    import signal
    import subprocess

    from helpers import LOOPKIT

    env = clean_env(**slack.env(LOOPKIT_HITL_SLACK_MODE="socket"))
    escalate = ["escalate", "-q", "Ship it?", "-c", "c", "-a", "a", "--choice", "Yes — go",
                "--choice", "No — wait"]  # fmt: skip
    assert loopkit("-C", str(ws), *escalate, env=env).returncode == 2
    [record] = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    ts = record["delivery"][0]["message_id"].split(":", 1)[1]
    out = tmp_path / "serve.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"], env=env,
                                stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                                start_new_session=True)  # fmt: skip
    try:
        wait_until(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), 20, "serve up")
        wait_until(lambda: slack.open_links() == 1, 10, "serve listens to the app")
        slack.click("U0ANA", ts, 1)
        wait_until(lambda: not (ws / "BLOCKED.md").exists(), 10, "the block lifted by serve")
        answered = json.loads(next((ws / "requests").glob("*.json")).read_text())
        assert answered["status"] == "resolved" and answered["resolution"]["via"] == "slack"
        wait_until(lambda: slack.called("chat.update"), 5, "the message updated")
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(10) == 143
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
