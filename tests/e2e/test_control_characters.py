"""Control characters and bidi overrides in a question are shown escaped — in the record,
BLOCKED.md, the phone's message and the terminal — never acted on."""

from __future__ import annotations

from pathlib import Path

from fakeserver import FakeServer
from helpers import loopkit, phone_env

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
