"""SPEC §17: a hostile or broken agent cannot hide its question. An agent that escalates and
then deletes ``requests/`` and ``.loopkit/`` leaves a ``BLOCKED.md`` whose marker names a
request that is gone: the supervisor raises it again from the file's sections, under the same
id, and sends it — never takes it for a human's pause."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakeserver import FakeServer
from helpers import ESCALATE, LOOPKIT, PHONE_CHAT, Daemon, phone_env, wait_until, write_config

AGENT = f"""\
import shutil, subprocess
subprocess.call([{str(LOOPKIT)!r}, *{ESCALATE!r}])
shutil.rmtree("requests", ignore_errors=True)
shutil.rmtree(".loopkit", ignore_errors=True)
"""


def test_a_block_whose_request_was_deleted_is_raised_again_and_sent(
    ws: Path, server: FakeServer
) -> None:
    (ws / "agent.py").write_text(AGENT)
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\niteration_timeout = "5m"\n'
        '[escalation]\nchannel = "telegram"\n',
    )
    with Daemon(ws, env=phone_env(server)) as daemon:
        wait_until(lambda: "raised again from" in daemon.stderr(), 20, "the block raised again")
        sent = server.wait_for("/sendMessage", timeout=10)
        assert "human's pause" not in daemon.stderr() + daemon.stdout()
    # Sent after it was restored (the agent may have deleted its record before or after the
    # supervisor's first send of it): the last message is the question.
    assert sent[-1].body["text"].splitlines()[1] == "Q: Which flow?"
    [path] = (ws / "requests").glob("*.json")
    record = json.loads(path.read_text())
    marker = (ws / "BLOCKED.md").read_text()
    assert record["request_id"] in marker  # the same request, under the block's own id
    assert record["prompt"] == "Which flow?"
    assert [o["label"] for o in record["options"]][:2] == ["Flow A", "Flow B"]
    assert record["status"] == "open" and record["block"] == "raised"


SENT_THEN_DELETED = f"""\
import glob, json, shutil, subprocess, time
subprocess.call([{str(LOOPKIT)!r}, *{ESCALATE!r}])
deadline = time.monotonic() + 20
while time.monotonic() < deadline:  # the supervisor sends it within a second (SPEC §16)
    sent = [json.load(open(p)) for p in glob.glob("requests/*.json")]
    if any(d.get("ok") for r in sent for d in r.get("delivery", [])):
        break
    time.sleep(0.05)
shutil.rmtree("requests", ignore_errors=True)
shutil.rmtree(".loopkit", ignore_errors=True)
"""


def test_a_question_raised_again_after_it_was_sent_is_not_sent_twice_and_its_buttons_answer(
    ws: Path, server: FakeServer
) -> None:
    """SPEC §28: the agent deletes its question's record after the supervisor sent it; the
    question raised again from BLOCKED.md is not sent a second time, and a tap on the message
    the human already has answers it."""
    (ws / "agent.py").write_text(SENT_THEN_DELETED)
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\niteration_timeout = "5m"\n'
        '[escalation]\nchannel = "telegram"\n',
    )
    with Daemon(ws, env=phone_env(server)) as daemon:

        def waiting_after_restore() -> bool:
            said = daemon.stderr()
            restored = said.find("raised again from")
            return restored >= 0 and "waiting for an answer" in said[restored:]

        wait_until(waiting_after_restore, 30, "the block raised again, and waited on")
        messages = server.calls("/sendMessage")
        questions = [n for n, call in enumerate(messages) if "Q: Which flow?" in call.body["text"]]
        assert len(questions) == 1, [call.body["text"] for call in messages]
        [path] = (ws / "requests").glob("*.json")
        request_id = json.loads(path.read_text())["request_id"]
        message_id = 101 + questions[0]  # the fake Bot API numbers its messages from 101
        server.push_update(callback_query={
            "id": "cb1", "from": {"id": 111, "first_name": "Ana"}, "data": f"{request_id}:1",
            "message": {"message_id": message_id, "chat": {"id": PHONE_CHAT, "type": "private"}},
        })  # fmt: skip
        wait_until(lambda: json.loads(path.read_text())["status"] == "resolved", 20, "answered")
        assert json.loads(path.read_text())["resolution"]["chosen_option"] == "flow-b"
