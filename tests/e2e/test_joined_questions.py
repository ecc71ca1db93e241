"""A question that joins a block whose request is already answered is not lost: it is
asked as a block of its own once that block goes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import loopkit, write_config


def escalate(ws: Path, question: str) -> int:
    args = ("escalate", "-q", question, "-c", "c", "-a", "a", "--choice", "Yes — go")
    return loopkit("-C", str(ws), *args).returncode


def test_a_question_joining_an_answered_block_is_asked_next(ws: Path) -> None:
    write_config(ws, f'[loop]\nagent = ["{sys.executable}", "-c", "pass"]\npause = "0s"\n')
    assert escalate(ws, "First question?") == 2
    first = json.loads(loopkit("-C", str(ws), "check", "--json").stdout)["request_id"]
    standing = (ws / "BLOCKED.md").read_text()
    answered = loopkit("-C", str(ws), "reply", "--request-id", first, "--reply", "A")
    assert answered.returncode == 0 and not (ws / "BLOCKED.md").exists()  # the answer lifts it
    (ws / "BLOCKED.md").write_text(standing)  # a copy brought back (a sync, a backup): it stands
    assert escalate(ws, "Second question?") == 2  # joins the answered block...
    records = {json.loads(p.read_text())["prompt"]: json.loads(p.read_text())
               for p in (ws / "requests").glob("*.json")}  # fmt: skip
    second = records["Second question?"]
    assert second["status"] == "open" and second["joined_to"] == first  # ...kept apart
    assert second["block"] == "joined"
    assert "joined" not in records["First question?"]
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    now = json.loads(loopkit("-C", str(ws), "check", "--json").stdout)
    assert now["request_id"] == second["request_id"]  # the second question is the block now
    assert "Second question?" in (ws / "BLOCKED.md").read_text()
