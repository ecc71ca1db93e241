"""Channel secrets never reach the agent, and what commands print passes the redactor
before it reaches BLOCKED.md, the request, state.json, the iteration log or the message."""

from __future__ import annotations

import sys
from pathlib import Path

from fakeserver import FakeServer
from helpers import clean_env, loopkit, write_config

TOKEN = "918273:AASecretTestTokenNotARealOne_qwerty"


def test_the_agent_has_no_token_and_verify_s_output_is_masked(ws: Path, server: FakeServer) -> None:
    (ws / "agent.py").write_text(
        "import os\nopen('agent-env.txt', 'w').write(repr(sorted(k for k in os.environ "
        "if k.startswith('LOOPKIT_HITL'))))\n"
    )
    # verify is the user's own command: it keeps the token, and prints it.
    (ws / "verify.sh").write_text('echo "auth failed for $LOOPKIT_HITL_TELEGRAM_TOKEN"\nexit 1\n')
    loop = f'agent = ["{sys.executable}", "agent.py"]\nverify = ["/bin/sh", "verify.sh"]\n'
    write_config(ws, f'[loop]\n{loop}pause = "0s"\nmax_verify_failures = 1\n')
    env = clean_env(
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT="1",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    done = loopkit("-C", str(ws), "run", "--exit-on-block", env=env)
    assert done.returncode == 2, done.stderr
    seen = (ws / "agent-env.txt").read_text()
    assert "LOOPKIT_HITL_TELEGRAM_TOKEN" not in seen and "LOOPKIT_HITL_TELEGRAM_CHAT" in seen
    everything = [done.stdout, done.stderr, (ws / "BLOCKED.md").read_text()]
    everything += [p.read_text() for p in (ws / "requests").glob("*.json")]
    everything += [p.read_text() for p in (ws / ".loopkit").rglob("*") if p.is_file()]
    everything += [str(c.body) for c in server.requests if "sendMessage" in c.path]
    assert "auth failed for ***" in (ws / "BLOCKED.md").read_text()
    assert not any(TOKEN in text or TOKEN.split(":")[1] in text for text in everything)
