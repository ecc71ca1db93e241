"""What one agent run cost, and whether its API was down or a call of its refused, read from
what Claude Code, Codex and Gemini CLI print (SPEC §19, §25): their JSON results as their
references give them, and the plain text an agent prints when its API fails."""

from __future__ import annotations

import json

import pytest

from loopkit.supervisor.spend import agent_run, price

CLAUDE_RESULT = {
    "type": "result", "subtype": "success", "is_error": False, "duration_ms": 48211,
    "num_turns": 12, "result": "Done: totals in cents.", "session_id": "2f4c9a1e-1d2b-4c55",
    "total_cost_usd": 0.4213, "usage": {"input_tokens": 31, "output_tokens": 2208},
    "permission_denials": [],
}  # fmt: skip


def test_claudes_result_gives_its_cost() -> None:
    run = agent_run(json.dumps(CLAUDE_RESULT))
    assert (run.cost_usd, run.outage, run.denied) == (0.4213, "", "")
    stream = "\n".join([json.dumps({"type": "system", "subtype": "init"}),
                        json.dumps({"type": "assistant", "message": {}}),
                        json.dumps(CLAUDE_RESULT)])  # fmt: skip
    assert agent_run(stream).cost_usd == 0.4213


def test_claudes_denied_call_is_named() -> None:
    denied = {**CLAUDE_RESULT, "permission_denials": [
        {"tool_name": "Bash", "tool_use_id": "toolu_01", "tool_input": {
            "command": "git push --force origin main", "description": "Push"}}]}  # fmt: skip
    assert agent_run(json.dumps(denied)).denied == "Bash(git push --force origin main)"
    edit = {
        **CLAUDE_RESULT,
        "permission_denials": [
            {"tool_name": "Write", "tool_use_id": "t", "tool_input": {"file_path": "/etc/hosts"}}
        ],
    }
    assert agent_run(json.dumps(edit)).denied == "Write(/etc/hosts)"


def test_claudes_overload_is_an_outage() -> None:
    result = {**CLAUDE_RESULT, "is_error": True, "result": 'API Error: 529 {"type":"error",'
              '"error":{"type":"overloaded_error","message":"Overloaded"}}'}  # fmt: skip
    assert "overloaded" in agent_run(json.dumps(result), exit_code=1).outage


CODEX = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
                                        "command": "bash -lc 'pytest -q'", "aggregated_output":
                                        "3 passed", "exit_code": 0, "status": "completed"}},
    {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                        "text": "Totals are in cents now."}},
    {"type": "turn.completed", "usage": {"input_tokens": 200_000, "cached_input_tokens":
                                         150_000, "output_tokens": 10_000}},
]  # fmt: skip


def test_codex_usage_is_priced() -> None:
    run = agent_run("\n".join(json.dumps(event) for event in CODEX))
    expected = price("gpt-5-codex", input_tokens=200_000, cached=150_000, output=10_000)
    assert run.cost_usd == pytest.approx(expected)
    assert expected == pytest.approx((50_000 * 1.25 + 150_000 * 0.125 + 10_000 * 10) / 1e6)


def test_codex_declined_command_and_failed_turn() -> None:
    declined = {"type": "item.completed", "item": {"id": "item_2", "type": "command_execution",
                "command": "rm -rf build", "aggregated_output": "", "exit_code": None,
                "status": "declined"}}  # fmt: skip
    failed = {
        "type": "turn.failed",
        "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
    }
    run = agent_run("\n".join(json.dumps(e) for e in [*CODEX[:2], declined, failed]), exit_code=1)
    assert run.denied == "shell(rm -rf build)"
    assert "429 Too Many Requests" in run.outage


GEMINI = {
    "session_id": "c1a2",
    "response": "I have updated the totals to cents.",
    "stats": {
        "models": {
            "gemini-2.5-flash": {
                "api": {"totalRequests": 3, "totalErrors": 0, "totalLatencyMs": 5053},
                "tokens": {"prompt": 100_000, "candidates": 4_000, "total": 106_000,
                           "cached": 60_000, "thoughts": 2_000, "tool": 0},
            }
        },
        "tools": {"totalCalls": 2, "totalSuccess": 2, "totalFail": 0},
        "files": {"totalLinesAdded": 12, "totalLinesRemoved": 3},
    },
}  # fmt: skip


def test_gemini_usage_is_priced_by_its_model() -> None:
    run = agent_run(json.dumps(GEMINI, indent=2))
    expected = price("gemini-2.5-flash", input_tokens=100_000, cached=60_000, output=6_000)
    assert run.cost_usd == pytest.approx(expected)
    # A long response pushes the object's start out of the kept tail: the stats are found.
    long = json.dumps({**GEMINI, "response": "x" * 20_000}, indent=2)
    assert agent_run(long[-8192:]).cost_usd == pytest.approx(expected)


def test_gemini_stream_result_and_its_quota_error() -> None:
    events = [
        {"type": "init", "timestamp": "2026-12-03T10:00:00Z", "session_id": "s", "model":
         "gemini-2.5-pro"},
        {"type": "result", "timestamp": "2026-12-03T10:01:00Z", "status": "error", "error": {
            "type": "ApiError", "message": "429 RESOURCE_EXHAUSTED: quota exceeded"}, "stats": {
            "total_tokens": 12_000, "input_tokens": 10_000, "output_tokens": 2_000, "cached": 0,
            "input": 10_000, "duration_ms": 900, "tool_calls": 0}},
    ]  # fmt: skip
    run = agent_run("\n".join(json.dumps(e) for e in events), exit_code=1)
    assert run.cost_usd == pytest.approx(price("gemini-2.5-pro", input_tokens=10_000, cached=0,
                                               output=2_000))  # fmt: skip
    assert "RESOURCE_EXHAUSTED" in run.outage


@pytest.mark.parametrize(
    "text",
    [
        'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Busy"}}',
        "Error: 429 Too Many Requests — retry after 20s",
        "Claude AI usage limit reached|1796421449",
        "rate_limit_error: This request would exceed your organization's rate limit",
    ],
)
def test_a_plain_text_rate_limit_or_overload_is_an_outage(text: str) -> None:
    assert agent_run(f"Working on the cart…\n{text}\n", exit_code=1).outage


def test_a_429_in_the_work_of_a_run_that_succeeded_is_no_outage() -> None:
    out = "Added the 429 handler: the client retries on Too Many Requests.\nAll 12 tests pass."
    assert agent_run(out, exit_code=0).outage == ""
    assert agent_run("Traceback …\nKeyError: 'model'\n", exit_code=1).outage == ""


def test_gemini_refused_call_is_named() -> None:
    events = [
        {"type": "init", "timestamp": "t", "session_id": "s", "model": "gemini-2.5-pro"},
        {"type": "tool_use", "timestamp": "t", "tool_name": "run_shell_command",
         "tool_id": "call-1", "parameters": {"command": "rm -rf dist"}},
        {"type": "tool_result", "timestamp": "t", "tool_id": "call-1", "status": "error",
         "error": {"type": "permission_denied", "message": "Tool execution denied by policy."}},
        {"type": "result", "timestamp": "t", "status": "success", "stats": {
            "total_tokens": 10, "input_tokens": 8, "output_tokens": 2, "cached": 0, "input": 8,
            "duration_ms": 5, "tool_calls": 1}},
    ]  # fmt: skip
    assert agent_run("\n".join(json.dumps(e) for e in events)).denied == (
        "run_shell_command(rm -rf dist)"
    )


def test_an_unreachable_api_is_an_outage() -> None:
    assert agent_run("API Error: Connection error.\n", exit_code=1).outage
