"""Control characters and bidi overrides in a question are shown escaped — in the record,
BLOCKED.md, the phone's message and the terminal — never acted on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fakeserver import FakeServer
from helpers import loopkit, phone_env, write_config

HOSTILE = "Deploy \x1b[31mnow\x1b[0m\x07 \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \u202eexe.txt?"


def test_escapes_and_bidi_overrides_are_shown_escaped_everywhere(
    ws: Path, server: FakeServer
) -> None:
    env = phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    done = loopkit("-C", str(ws), "escalate", "-q", HOSTILE, "-c", "ctx\x1b[2J", "-a", "a\x9b",
                   "--choice", "Go\u2066 — on", env=env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    (record,) = (ws / "requests").glob("*.json")
    sent = [str(c.body) for c in server.calls("/sendMessage")]
    surfaces = {
        "stdout": done.stdout,
        "stderr": done.stderr,
        "BLOCKED.md": (ws / "BLOCKED.md").read_text(),
        "record": record.read_text(),
        "message": " ".join(sent),
        "status": loopkit("-C", str(ws), "status").stdout,
        "requests": loopkit("-C", str(ws), "requests").stdout,
    }
    for name, text in surfaces.items():
        for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066"):
            assert raw not in text, (name, repr(raw))
    assert "\\x1b[31mnow" in surfaces["BLOCKED.md"] and "\\u202eexe" in surfaces["BLOCKED.md"]
    assert "\\x1b[31mnow" in surfaces["stdout"]


# What an agent may write into its own BLOCKED.md: colours, a screen clear, a title change,
# an OSC 8 link, a bell, C1 controls, a bidi override, and a line far longer than a screen.
WRITTEN = (
    "## Question:\nDeploy \x1b[31mnow\x1b[0m?\x07 \x1b]0;pwned\x07 \x1b[2J\x9b31m \u202eexe.txt\n"
    "## Context:\n\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ " + "x" * 100_000 + "\n"
    "## Choices:\n- A) Go\x1b[8m hidden\n"
)
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def assert_shown_safely(name: str, text: str) -> None:
    for raw in RAW:
        assert raw not in text, (name, repr(raw))
    assert all(len(line) <= 300 for line in text.splitlines()), (name, "a line is not cut")


def test_check_shows_an_agents_blocked_md_escaped_and_cut(ws: Path) -> None:
    """SPEC §28, printing is safe: what ``check`` prints of BLOCKED.md (and ``--json``'s head)."""
    (ws / "BLOCKED.md").write_text(WRITTEN)
    done = loopkit("-C", str(ws), "check")
    assert done.returncode == 2
    assert_shown_safely("check", done.stdout)
    assert "\\x1b[31mnow" in done.stdout and "\\u202eexe" in done.stdout and "…" in done.stdout
    head = json.loads(loopkit("-C", str(ws), "check", "--json").stdout)["head"]
    assert_shown_safely("check --json", head)


def test_run_exit_on_block_and_status_show_an_agents_blocked_md_escaped_and_cut(ws: Path) -> None:
    said = "\x1b[2J\x1b]0;pwned\x07 done " + "y" * 5000  # its output: shown in status too
    (ws / "agent.py").write_text(f"print({said!r})\nopen('BLOCKED.md', 'w').write({WRITTEN!r})\n")
    write_config(ws, f'[loop]\nagent = ["{sys.executable}", "agent.py"]\n'
                     'iteration_timeout = "30s"\n[escalation]\nchannel = "none"\n')  # fmt: skip
    done = loopkit("-C", str(ws), "run", "--exit-on-block", timeout=120)
    assert done.returncode == 2, done.stderr
    # The agent's own output is its console's, passed through as a terminal program's is.
    printed = (done.stdout + done.stderr).replace(said + "\n", "")
    assert_shown_safely("run --exit-on-block", printed)
    assert "\\x1b[31mnow" in done.stdout
    status = loopkit("-C", str(ws), "status")
    assert status.returncode in (0, 2), status.stderr
    assert_shown_safely("status", status.stdout)
    shown = loopkit("-C", str(ws), "status", "--json").stdout  # one line of JSON: never cut
    assert not [raw for raw in RAW if raw in shown]
