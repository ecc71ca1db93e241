"""Asking while a block is open: a question joins the block, keeps its own request, and is
raised as its own block once the open one goes."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import ESCALATE, LOOPKIT, ask, ask_json, clean_env, files, gate, loopkit, record


def test_ask_and_gate_while_blocked_keep_their_own_request(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json"]
    first = json.loads(ask(ws, *args).stdout)
    assert first["request"]["prompt"] == "Which currency?"
    assert first["request"]["block"] == "joined" and first["request"]["joined_to"]
    again = json.loads(ask(ws, *args).stdout)
    assert again["request_id"] == first["request_id"]
    gated = gate(ws, "sh", "-c", "true")
    assert gated.returncode == 2
    waiting = gated.stderr.split("requests/")[1].split(".json")[0]
    assert (ws / "requests" / f"{waiting}.json").exists()
    # The open block goes; asking again raises the joined question as its own block.
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    raised = json.loads(ask(ws, *args).stdout)
    assert raised["request_id"] == first["request_id"]
    assert f"loopkit request: {first['request_id']}" in (ws / "BLOCKED.md").read_text()


def test_asking_again_while_blocked_leaves_the_open_block_alone(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [block] = files(ws)
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json"]
    assert ask(ws, *args).returncode == 2
    seen = record(ws, block.stem)["updated_at"]  # what the human read
    assert ask(ws, *args).returncode == 2  # the agent asks again, and again
    assert ask(ws, *args).returncode == 2
    assert len(record(ws, block.stem)["joined"]) == 1  # type: ignore[arg-type]
    guarded = loopkit("-C", str(ws), "reply", "--request-id", block.stem, "--reply", "A",
                      "--expected-updated-at", str(seen))  # fmt: skip
    assert guarded.returncode == 0, guarded.stderr


def test_raising_a_joined_question_sends_outside_the_store_lock(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    other = ask_json(ws, "-s", "Which date library?", "--key", "dates")
    args = ["-s", "Which currency?", "--key", "currency", "--block"]
    assert ask(ws, *args).returncode == 2
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    # The gateway answers another request while it sends: that needs the store lock.
    dial = f"{LOOPKIT} -C {ws} reply --request-id {other['request_id']} --reply A"
    env = clean_env(LOOPKIT_HITL_CHANNEL="dial", LOOPKIT_HITL_DIAL_CMD=dial)
    raised = ask(ws, *args, env=env)
    assert raised.returncode == 2, raised.stderr
    assert record(ws, str(other["request_id"]))["status"] == "resolved"


def test_a_question_that_joined_a_hand_written_block_is_raised_when_it_goes(ws: Path) -> None:
    (ws / "BLOCKED.md").write_text("Waiting for the design review.\n")
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json"]
    joined = json.loads(ask(ws, *args).stdout)
    (ws / "BLOCKED.md").unlink()
    raised = json.loads(ask(ws, *args).stdout)
    assert raised["request_id"] == joined["request_id"]
    assert f"loopkit request: {joined['request_id']}" in (ws / "BLOCKED.md").read_text()
