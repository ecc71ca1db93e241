"""``loopkit ask`` through the installed loopkit: the decision table, the prompt block, the
rubric's refusals, one request per key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakeserver import FakeServer
from helpers import ask, ask_json, clean_env, files, record


@pytest.mark.parametrize(
    ("args", "needs_human"),
    [
        (["-s", "Rename the CSS class .btn-primary to .button-primary", "--confidence", "0.9"],
         False),
        (["-s", "Add a created_by column to orders following the existing updated_by pattern",
          "--category", "ontology", "--confidence", "0.9"], False),
        (["-s", "Drop the production users table and rebuild it", "--confidence", "0.99",
          "--prompt", "Drop and rebuild the production users table?"], True),
        (["-s", "Add a paid service (Algolia, $29/month) for search", "--category", "third-party",
          "--confidence", "0.9", "--prompt", "Add Algolia at $29/month for search?"], True),
        (["-s", "Switch the public API from REST to GraphQL", "--category", "one-way-door",
          "--confidence", "0.95", "--prompt", "Switch the public API to GraphQL?"], True),
        (["-s", "Which of two equally good date libraries?", "--confidence", "0.3"], True),
        (["-s", "Which of two equally good date libraries?"], True),
    ],
)  # fmt: skip
def test_decision_table(ws: Path, args: list[str], needs_human: bool) -> None:
    data = ask_json(ws, *args)
    assert data["needs_human"] is needs_human, data["reason"]
    if needs_human:
        assert isinstance(data["request_id"], str) and len(files(ws)) == 1
        assert record(ws, data["request_id"])["status"] == "open"
    else:
        assert data["request_id"] is None and data["request"] is None
        assert files(ws) == [] and not (ws / "BLOCKED.md").exists()


def test_p0_defaults_the_timeout_to_abort(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\ntimeout_action = "skip"\n')
    p0 = ask_json(ws, "-s", "Force-push main", "--prompt", "Force-push main?")
    assert p0["request"]["timeout_default"]["action"] == "abort"  # type: ignore[index]
    plain = ask_json(ws, "-s", "Which date library?", "--key", "other")
    assert plain["request"]["timeout_default"]["action"] == "skip"  # type: ignore[index]


def test_the_prompt_block(ws: Path) -> None:
    done = ask(
        ws, "-s", "Which flow?", "--option", "Flow A=a", "--option", "Flow B=b",
        "--recommend", "b", "--attach", "docs/flows.md", "--timeout", "45",
    )  # fmt: skip
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "Which flow?",
        "  A) Flow A",
        "  B) Flow B  (recommended)",
        "On timeout (45 min): queue",  # SPEC §9: a non-P0 question keeps waiting
        "Context: docs/flows.md",
    ]
    assert lines[5].startswith("Request: requests/")


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        (["--prompt", "x" * 120 + "?"], "stem-length"),
        (["--prompt", "Go?", "--option", "y" * 25], "option-length"),
        (["--prompt", "Go?", "--option", "A", "--option", "B", "--option", "C", "--option", "D"],
         "option-count"),
        (["--prompt", "Ship it? \U0001f680"], "emoji"),
        (["--prompt", "Go?", "--option", "Ship \u2705"], "emoji"),
        (["--prompt", "Should I skip the test? Should I email Ana?"], "one-question"),
    ],
)  # fmt: skip
def test_rubric_refusals_name_the_rule_and_write_nothing(
    ws: Path, args: list[str], rule: str
) -> None:
    done = ask(ws, "-s", "Unsure which way to go", *args)
    assert done.returncode == 65, done.stderr
    assert f"rubric: {rule}:" in done.stderr
    assert files(ws) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--prompt", "x" * 119 + "?"],
        ["--prompt", "Go?", "--option", "y" * 24],
        ["--prompt", "Go?", "--option", "A", "--option", "B", "--option", "C"],
        ["--prompt", "Use Postgres or SQLite?"],
    ],
)
def test_rubric_boundaries_that_pass(ws: Path, args: list[str]) -> None:
    assert ask(ws, "-s", "Unsure which way to go", *args).returncode == 0
    assert len(files(ws)) == 1


def test_same_key_returns_the_open_request(ws: Path, server: FakeServer) -> None:
    env = clean_env(
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN="1234:AAKeyTestTokenNotRealAtAll_xyz",
        LOOPKIT_HITL_TELEGRAM_CHAT="1",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    args = ["-s", "Which flow?", "--key", "flow-q", "--block", "--json"]
    first = ask(ws, *args, env=env)
    second = ask(ws, *args, env=env)
    assert first.returncode == second.returncode == 2  # --block: blocked
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["request_id"] == b["request_id"]
    assert len(files(ws)) == 1
    assert len(server.calls("/sendMessage")) == 1
    assert (ws / "BLOCKED.md").read_text().count(f"loopkit request: {a['request_id']}") == 1


def test_asking_again_with_block_raises_a_question_asked_without(ws: Path) -> None:
    args = ["-s", "Which currency?", "--key", "currency", "--json"]
    first = json.loads(ask(ws, *args).stdout)
    assert not (ws / "BLOCKED.md").exists()
    raised = json.loads(ask(ws, *args, "--block").stdout)
    assert raised["request_id"] == first["request_id"] and len(files(ws)) == 1
    assert f"loopkit request: {first['request_id']}" in (ws / "BLOCKED.md").read_text()
    again = ask(ws, *args, "--block")  # once raised, asking again changes nothing
    assert again.returncode == 2 and len(files(ws)) == 1
