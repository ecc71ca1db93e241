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


ANTHROPIC = "sk-ant-api03-" + "Zq8xN3vR7tY2mK9pL4wB6cF1hJ5dS0gA" * 3 + "AA"
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ2cD4"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_what_looks_like_a_secret_is_masked_wherever_it_goes(ws: Path, server: FakeServer) -> None:
    """SPEC §26: no secret was configured here; the agent prints keys of known shapes, and
    its question names one — none reaches BLOCKED.md, a request, status, the inbox, the
    logs or the message, each masked where it stood (``api_key=***``)."""
    (ws / "agent.sh").write_text(
        f'echo "loading .env: api_key={ANTHROPIC}"\n'
        f'echo "GITHUB_TOKEN={GITHUB} AWS_SECRET_ACCESS_KEY={AWS_SECRET}"\n'
    )
    (ws / "verify.sh").write_text(f'echo "401 for token {GITHUB}"\nexit 1\n')
    write_config(ws, '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = ["/bin/sh", "verify.sh"]\n'
                 'pause = "0s"\nmax_verify_failures = 1\n')  # fmt: skip
    phone = {"LOOPKIT_HITL_TELEGRAM_CHAT": "1", "LOOPKIT_HITL_TELEGRAM_API": server.url}
    env = clean_env(LOOPKIT_HITL_CHANNEL="telegram", LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN, **phone)
    done = loopkit("-C", str(ws), "run", "--exit-on-block", env=env)
    assert done.returncode == 2, done.stderr
    asked = loopkit("-C", str(ws), "escalate", "-q", f"Is {ANTHROPIC} still valid?",
                    "-c", f"api_key={ANTHROPIC} from .env", "-a", f"curl with {GITHUB}",
                    "--choice", "Rotate it — a new key", env=env)  # fmt: skip
    assert asked.returncode == 2, asked.stderr  # it joins the open block: its words kept
    blocked = (ws / "BLOCKED.md").read_text()
    assert "api_key=***" in blocked and "GITHUB_TOKEN=***" in blocked
    shown = [done.stdout, done.stderr, asked.stdout, asked.stderr, blocked]
    for command in (["status"], ["status", "--json"], ["inbox"], ["inbox", "--json"],
                    ["requests", "--json"]):  # fmt: skip
        seen = loopkit("-C", str(ws), *command, env=env)
        assert seen.returncode == 0, seen.stderr
        shown += [seen.stdout, seen.stderr]
    shown += [p.read_text() for p in (ws / "requests").glob("*.json")]
    shown += [p.read_text() for p in (ws / ".loopkit").rglob("*") if p.is_file()]
    shown += [str(c.body) for c in server.requests if "sendMessage" in c.path]
    for secret in (ANTHROPIC, GITHUB, AWS_SECRET):
        assert not any(secret in text or secret[12:30] in text for text in shown), secret
