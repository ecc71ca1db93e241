"""What the human needs to decide is on the question (SPEC §22): the agent's last output
(redacted, its last 20 lines) and ``git diff --stat`` since the task started — in
BLOCKED.md's Context, in ``loopkit status`` and on the question's page; never in the
five-line message."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from loopkit.fleet import Hubs
from loopkit.home import Registry, home, workspace_id
from loopkit.inbox.auth import InboxToken, Throttle
from loopkit.inbox.web import Inbox, app

from helpers import Browser, clean_env, loopkit, setup

SECRET = "123456:AAFakeTokenInTheAgentOutput_abcdefgh"
# Prints 30 numbered lines (a token-shaped secret among them) and changes a tracked file —
# by a comment: no new ground (SPEC §25), so max_verify_failures = 1 asks at once.
AGENT = (
    f'for i in $(seq 1 30); do echo "agent line $i"; done\necho "token {SECRET}"\n'
    'echo "# checked" >> app.py\n'
)


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)  # fmt: skip


def test_the_agent_s_last_output_and_its_changes_are_on_the_question(ws: Path) -> None:
    _git(ws, "init", "-q")
    (ws / "app.py").write_text("print(1)\n")
    setup(ws, "max_verify_failures = 1", agent=AGENT)
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "start")
    message = ws.parent / "message.txt"
    env = clean_env(LOOPKIT_HITL_CHANNEL="dial", LOOPKIT_HITL_DIAL_CMD=f"tee {message}")
    done = loopkit("-C", str(ws), "run", "--exit-on-block", env=env)
    assert done.returncode == 2, done.stderr

    blocked = (ws / "BLOCKED.md").read_text()
    context = blocked.split("## Context:", 1)[1].split("## Attempted:", 1)[0]
    assert "Agent's last output (last 20 lines, redacted):" in context
    # The last 20 lines: 12 … 30, and the token's line.
    assert "    agent line 30" in context and "    agent line 12" in context
    assert "agent line 11\n" not in context
    assert SECRET not in blocked and "token ***" in context
    assert "Changes since the task started (git diff --stat " in context
    assert "app.py | 1 +" in context

    five = message.read_text().splitlines()
    assert len(five) == 5 and not any("agent line" in line or "app.py" in line for line in five)

    status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
    assert status["evidence"]["output"][-1] == "token ***"
    assert len(status["evidence"]["output"]) == 20
    assert any("app.py" in line for line in status["evidence"]["diff_stat"])
    shown = loopkit("-C", str(ws), "status").stdout
    assert "output:    the agent's last lines (redacted):" in shown and "app.py" in shown

    # The question's page.
    Registry().register(ws, "ws")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    from loopkit.requests.locate import Stores

    browser = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)))
    browser.get(f"/?token={token.value()}", follow_redirects=False)
    request_id = next((ws / "requests").glob("*.json")).stem
    page = browser.get(f"/r/{workspace_id(ws.resolve())}/{request_id}").text
    assert "The agent's last output" in page and "agent line 30" in page
    assert SECRET not in page and "app.py | 1 +" in page
