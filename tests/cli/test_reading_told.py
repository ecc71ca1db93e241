"""``reply`` and ``unblock --reply`` tell how the reply was read on stderr (SPEC §16); stdout
stays the decision JSON of section 4, unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ESCALATE, files, lk

DECISION_KEYS = {"request_id", "chosen_option", "free_text", "parsed_decision", "resolved_at"}


def test_reply_prints_the_decision_and_tells_the_reading(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    done = lk(ws, "reply", "--request-id", path.stem, "--reply", "B, the old API is going away")
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert set(decision) == DECISION_KEYS and decision["chosen_option"] == "flow-b"
    assert '→ B) Flow B (letter B); note: "the old API is going away"' in done.stderr.splitlines()


def test_unblock_reply_tells_free_text_as_free_text(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    done = lk(ws, "unblock", "--reply", "Flow C?")
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert set(decision) == DECISION_KEYS and decision["free_text"] == "Flow C?"
    told = "→ no option matched: kept as free text; the agent gets it as your answer, in your words"
    assert done.stderr.splitlines()[0] == told
    assert not (ws / "BLOCKED.md").exists()
