"""Reading the result ``claude -p --output-format json`` prints at the end of its output."""

from __future__ import annotations

import json

from loopkit.agentresult import read_result

RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "duration_ms": 1234,
    "num_turns": 3,
    "result": "Done. The token was sk-live-123.",
    "session_id": "5a0c2d57-2f43-4f8e-9d43-0e0b6c1f1a2b",
    "total_cost_usd": 0.0421,
    "permission_denials": [
        {"tool_name": "Bash", "tool_use_id": "toolu_01", "tool_input": {"command": "rm -rf /"}}
    ],
}


def test_the_result_that_ends_the_output_is_read() -> None:
    text = "working…\n{not json\n" + json.dumps(RESULT) + "\n\n"
    result = read_result(text)
    assert result is not None
    assert result.session_id == RESULT["session_id"]
    assert result.total_cost_usd == 0.0421
    assert (result.is_error, result.subtype, result.num_turns) == (False, "success", 3)
    assert [(d.tool_name, d.tool_use_id) for d in result.permission_denials] == [
        ("Bash", "toolu_01")
    ]
    # Only what a supervisor acts on: never the agent's words, never a denied call's input.
    shown = json.dumps(result.to_dict())
    assert "sk-live" not in shown and "rm -rf" not in shown


def test_a_pretty_printed_result_and_a_stream_json_one_are_read() -> None:
    assert read_result(json.dumps(RESULT, indent=2)) is not None
    stream = "\n".join(
        json.dumps(line)
        for line in (
            {"type": "system", "subtype": "init", "session_id": "s1"},
            {"type": "assistant", "message": {"content": [{"type": "text", "text": "{"}]}},
            {**RESULT, "session_id": "s1"},
        )
    )
    result = read_result(stream)
    assert result is not None and result.session_id == "s1"


def test_a_deferred_call_and_an_error_result() -> None:
    deferred = {
        **RESULT,
        "stop_reason": "tool_deferred",
        "deferred_tool_use": {"id": "toolu_9", "name": "AskUserQuestion", "input": {}},
    }
    result = read_result(json.dumps(deferred))
    assert result is not None and result.deferred
    assert (result.deferred_tool, result.deferred_tool_id) == ("AskUserQuestion", "toolu_9")
    gone = {**deferred, "is_error": True, "stop_reason": "tool_deferred_unavailable"}
    result = read_result(json.dumps(gone))
    assert result is not None and result.is_error and not result.deferred
    turns = read_result(json.dumps({**RESULT, "subtype": "error_max_turns", "is_error": True}))
    assert turns is not None and turns.subtype == "error_max_turns" and turns.is_error


def test_no_result_when_the_output_does_not_end_with_one() -> None:
    assert read_result("") is None
    assert read_result("all done\n") is None
    assert read_result(json.dumps(RESULT) + "\nthen more words\n") is None
    assert read_result(json.dumps({"type": "assistant"})) is None
    assert read_result('{"type": "result", "session_id": ') is None


def test_fields_of_the_wrong_type_are_left_out_and_a_hostile_session_id_is_refused() -> None:
    odd = {
        **RESULT,
        "total_cost_usd": "lots",
        "num_turns": True,
        "is_error": "yes",
        "permission_denials": ["Bash", {"tool_input": {}}],
        "session_id": "x; rm -rf ~",
    }
    result = read_result(json.dumps(odd))
    assert result is not None
    assert result.total_cost_usd is None and result.num_turns is None
    assert result.is_error is False and result.permission_denials == ()
    assert result.session_id is None  # it would go on the resume command line


def test_an_api_failure_in_the_result_is_sorted_by_its_status() -> None:
    from loopkit.agentresult import failure_kind

    def failed(status: int) -> tuple[str, str] | None:
        data = {**RESULT, "is_error": True, "api_error_status": status, "subtype": "success"}
        result = read_result(json.dumps(data))
        assert result is not None and result.api_error_status == status
        return result.failure()

    for status in (408, 409, 429, 500, 502, 503, 529):
        assert failed(status) == ("dependency", f"HTTP {status}")
    for status in (401, 402, 403):
        assert failed(status) == ("credential", f"HTTP {status}")
    assert failed(400) is None and failed(404) is None  # the agent's own fault: counted
    ok = read_result(json.dumps({**RESULT, "api_error_status": 429}))
    assert ok is not None and ok.failure() is None  # not an error result: nothing failed
    # The StopFailure hook's names: Claude Code reports a 529 or a 500 as server_error.
    assert [failure_kind(e) for e in ("rate_limit", "overloaded", "server_error")] == [
        "dependency"
    ] * 3
    assert failure_kind("authentication_failed") == failure_kind("billing_error") == "credential"
    assert failure_kind("max_output_tokens") == "other"
    bogus = read_result(json.dumps({**RESULT, "is_error": True, "api_error_status": True}))
    assert bogus is not None and bogus.api_error_status is None
