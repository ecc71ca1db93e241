"""SPEC §17: a hostile or broken agent cannot hide its question. An agent that escalates and
then deletes ``requests/`` and ``.loopkit/`` leaves a ``BLOCKED.md`` whose marker names a
request that is gone: the supervisor raises it again from the file's sections, under the same
id, and sends it — never takes it for a human's pause."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakeserver import FakeServer
from helpers import ESCALATE, LOOPKIT, Daemon, phone_env, wait_until, write_config

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
