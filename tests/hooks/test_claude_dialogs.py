"""Claude's own questions and permission dialogs, one hook call at a time (SPEC §18)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from loopkit.hooks.dialog import always_rule, verdict
from loopkit.requests.models import Option, Resolution
from loopkit.requests.record import Request

from helpers import LOOPKIT, clean_env, write_config

ASK = {
    "questions": [
        {
            "question": "Which one?",
            "header": "Pick",
            "options": [{"label": "A1"}, {"label": "B1"}],
            "multiSelect": False,
        }
    ]
}


def pretooluse(ws: Path, tool_input: object, **env: str) -> subprocess.CompletedProcess[str]:
    event = {
        "session_id": "s1",
        "cwd": str(ws),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "AskUserQuestion",
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
    }
    return subprocess.run(
        [str(LOOPKIT), "hook", "claude", "pretooluse"],
        cwd=ws,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env=clean_env(**env),
        timeout=60,
    )


def test_a_question_outside_loopkit_run_is_left_to_claude_code(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    done = pretooluse(ws, ASK)
    assert (done.returncode, done.stdout) == (0, "")
    assert not (ws / "requests").exists()


def test_under_loopkit_run_a_question_is_deferred_once_and_asked(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    supervised = {"LOOPKIT_AGENT_SESSION": "t", "LOOPKIT_WORKSPACE": str(ws)}
    for _ in range(2):  # fired again before the answer: still one request, still deferred
        done = pretooluse(ws, ASK, **supervised)
        out = json.loads(done.stdout)["hookSpecificOutput"]
        assert out["permissionDecision"] == "defer", done.stderr
    [record] = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    assert record["gate"]["session"] == "s1" and record["raised_by"] == "agent"
    # Input without questions is no question: no decision, nothing asked.
    done = pretooluse(ws, {"questions": "which?"}, **supervised)
    assert (done.returncode, done.stdout) == (0, "")
    assert len(list((ws / "requests").glob("*.json"))) == 1


def _answered(outcome: str, **res: Any) -> Request:
    return Request(
        request_id="r1",
        prompt="Claude asks permission: `npm test`",
        kind="approval",
        options=[Option("Allow", "approved"), Option("Deny", "rejected")],
        status="resolved",
        resolution=Resolution(request_id="r1", outcome=outcome, by="ana", **res),
    )


SUGGESTION = {
    "type": "addRules",
    "rules": [{"toolName": "Bash", "ruleContent": "npm test"}],
    "behavior": "allow",
    "destination": "localSettings",
}


def test_a_permission_answer_as_claude_code_reads_it() -> None:
    event = {"tool_name": "Bash", "permission_suggestions": [SUGGESTION]}
    allow = verdict(_answered("approved"), event)
    assert allow is not None
    assert allow["hookSpecificOutput"] == {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow"},
    }
    always = verdict(_answered("always"), event)
    assert always is not None
    assert always["hookSpecificOutput"]["decision"]["updatedPermissions"] == [SUGGESTION]
    deny = verdict(_answered("rejected", reason="not on the shared runner"), event)
    assert deny is not None
    assert deny["hookSpecificOutput"]["decision"] == {
        "behavior": "deny",
        "message": "denied by ana: not on the shared runner",
    }
    # Nobody answered: no decision, Claude's own dialog stands.
    lifted = _answered("unblocked")
    assert verdict(lifted, event) is None
    expired = _answered("expired")
    expired.status = "expired"
    assert verdict(expired, event) is None
    # "Always allow" only where Claude offers an allow rule.
    assert always_rule({"permission_suggestions": [{**SUGGESTION, "behavior": "deny"}]}) is None
    assert always_rule({"permission_suggestions": [{"type": "setMode", "mode": "plan"}]}) is None
    assert always_rule(event) == SUGGESTION


def test_an_answer_is_read_as_labels_several_for_a_multi_select() -> None:
    from loopkit.hooks.question import answer_of

    labels = ["SQLite", "Postgres", "MySQL", "DuckDB"]

    def said(free_text: str | None = None, chosen: str | None = None) -> Request:
        return Request(
            request_id="q1",
            prompt="Which?",
            status="resolved",
            options=[Option(label, value=label) for label in labels[:3]],
            resolution=Resolution(
                request_id="q1", chosen_option=chosen, free_text=free_text, by="ana"
            ),
        )

    assert answer_of(said(chosen="Postgres"), labels) == "Postgres"
    assert answer_of(said("duckdb"), labels) == "DuckDB"  # the fourth, typed out
    assert answer_of(said("A, d"), labels, multi=True) == "SQLite, DuckDB"
    assert answer_of(said("SQLite, Postgres"), labels, multi=True) == "SQLite, Postgres"
    assert answer_of(said("whatever is fastest"), labels) == "whatever is fastest"
    open_one = said("A")
    open_one.status = "open"
    assert answer_of(open_one, labels) is None
