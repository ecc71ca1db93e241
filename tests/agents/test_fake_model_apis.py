"""The fake model APIs refuse what the real ones refuse (a fake kinder than the service would
let a broken client pass): each case below is one the published API answers 400."""

from __future__ import annotations

import httpx
from openai_api import OpenAIApi

CALL = {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
USER = {"role": "user", "content": "go"}


def _post(api: OpenAIApi, items: list[dict[str, object]]) -> httpx.Response:
    return httpx.post(
        f"{api.url}/v1/responses",
        json={"model": "gpt-5-codex", "input": items},
        headers={"authorization": f"Bearer {api.api_key}"},
        timeout=10,
    )


def test_the_responses_api_wants_each_call_answered_and_each_answer_called() -> None:
    with OpenAIApi() as api:
        assert _post(api, [USER, CALL, OUTPUT]).status_code == 200
        unanswered = _post(api, [USER, CALL])
        assert unanswered.status_code == 400
        assert "No tool output found for function call c1" in unanswered.text
        orphan = _post(api, [USER, OUTPUT])
        assert orphan.status_code == 400 and "No tool call found" in orphan.text
        assert [reason for _, reason in api.rejected][-2:] == [
            "No tool output found for function call c1.",
            "No tool call found for function call output with call_id c1.",
        ]
