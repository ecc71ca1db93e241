"""A fake OpenAI Responses API for the real Codex CLI (a model provider in
``$CODEX_HOME/config.toml`` with ``wire_api = "responses"``).

Written to OpenAI's published references:

- Create a model response (https://platform.openai.com/docs/api-reference/responses/create):
  ``POST /v1/responses`` with ``model`` and ``input`` (a list of items: messages,
  ``function_call`` and ``function_call_output``, ``custom_tool_call`` and
  ``custom_tool_call_output``, ``reasoning``) and ``tools``; ``Authorization: Bearer``.
- Streaming responses (https://platform.openai.com/docs/api-reference/responses-streaming):
  server-sent events, each with ``type`` and ``sequence_number``: ``response.created``,
  ``response.in_progress``, ``response.output_item.added``, ``response.output_text.delta``,
  ``response.output_item.done``, ``response.completed`` (the response with its ``output`` and
  ``usage``).
- Function calling (https://platform.openai.com/docs/guides/function-calling): a
  ``function_call`` item carries ``call_id``, ``name`` and ``arguments`` (a JSON string); a
  ``function_call_output`` in a later request must name a ``call_id`` the conversation holds,
  or the request is refused (400, "No tool call found for function call output with
  call_id …").
- Error codes (https://platform.openai.com/docs/guides/error-codes): the body is
  ``{"error": {"message", "type", "param", "code"}}`` — 401 ``invalid_api_key``, 429
  ``rate_limit_exceeded``, 500 ``server_error``, 503 overloaded.

Every request that offers tools takes the script's next step (:mod:`wire`); a
:class:`~wire.Call` of a shell tool is sent as the tool Codex offered for it.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from wire import Api, Call, Fail, Reply, Say, Seen

_ids = itertools.count(1)
ERRORS = {
    400: ("invalid_request_error", "invalid_request_error"),
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "server_error"),
    503: ("server_error", "server_is_overloaded"),
}
MESSAGES = {
    401: "Incorrect API key provided.",
    429: "Rate limit reached for requests. Please try again in 1s.",
    500: "The server had an error while processing your request.",
    503: "The engine is currently overloaded, please try again later.",
}
CALL_TYPES = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "local_shell_call": "local_shell_call_output",
}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind, code = ERRORS.get(status, ("server_error", None))
    return {"error": {"message": message or MESSAGES.get(status, kind), "type": kind,
                      "param": None, "code": code}}  # fmt: skip


class OpenAIApi(Api):
    name = "openai"
    api_key = "sk-fake-openai-key-for-tests"

    def answer(self, seen: Seen) -> Reply:
        path = seen.path.split("?", 1)[0]
        if seen.method == "GET" and path.endswith("/models"):
            return Reply(200, {"object": "list", "data": [], "models": []})
        if seen.method != "POST" or not path.endswith("/responses"):
            return self.reject(seen, 404, f"{seen.method} {path}", error_body(404, "Not found"))
        if seen.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.reject(seen, 401, "bad key", error_body(401))
        body = seen.body
        if not isinstance(body, dict):
            return self.reject(
                seen, 400, "not JSON", error_body(400, "We could not parse the JSON body")
            )
        problem = _problem(body)
        if problem:
            return self.reject(seen, 400, problem, error_body(400, problem))
        step = self.next_step(seen) if body.get("tools") else Say("ok")
        if step is None:
            step = Say("(the test's script has no more steps)")
        if isinstance(step, Fail):
            headers = {"retry-after": step.retry_after} if step.retry_after else {}
            return Reply(step.status, error_body(step.status), headers)
        output = _output(body, step)
        usage = {
            "input_tokens": 100,
            "output_tokens": 20,
            "total_tokens": 120,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        response = {
            "id": f"resp_fake{next(_ids):06d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body["model"],
            "output": output,
            "usage": usage,
        }
        if not body.get("stream"):
            return Reply(200, response)
        return Reply(200, events=_events(response))

    def tool_calls(self) -> list[tuple[dict[str, Any], Any]]:
        """Every call the script made, with the output Codex sent back for it (None: none)."""
        outputs: dict[str, Any] = {}
        calls: dict[str, dict[str, Any]] = {}
        for seen in self.turns():
            for item in seen.body.get("input", []):
                if isinstance(item, dict) and item.get("type") in CALL_TYPES:
                    calls.setdefault(item["call_id"], item)
                if isinstance(item, dict) and item.get("type") in CALL_TYPES.values():
                    outputs.setdefault(item["call_id"], item.get("output"))
        return [(call, outputs.get(cid)) for cid, call in calls.items()]


def _problem(body: dict[str, Any]) -> str | None:
    for name in ("model", "input"):
        if name not in body:
            return f"Missing required parameter: '{name}'."
    items = body["input"]
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return "Invalid type for 'input': expected a string or an array."
    called: set[str] = set()
    answered: set[str] = set()
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            return f"Invalid type for 'input[{n}]'."
        kind = item.get("type")
        if kind in CALL_TYPES:
            called.add(str(item.get("call_id")))
        elif kind in CALL_TYPES.values() and str(item.get("call_id")) not in called:
            return (
                f"No tool call found for function call output with call_id {item.get('call_id')}."
            )
        elif kind in CALL_TYPES.values():
            answered.add(str(item.get("call_id")))
    unanswered = sorted(called - answered)  # both ways, as the API checks them
    if unanswered:
        return f"No tool output found for function call {unanswered[0]}."
    return None


def _offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {}
    for tool in body.get("tools", []):
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            found[name] = tool
    return found


def _output(body: dict[str, Any], step: Say | Call) -> list[dict[str, Any]]:
    n = next(_ids)
    if isinstance(step, Say):
        text = {"type": "output_text", "text": step.text, "annotations": []}
        return [{"type": "message", "id": f"msg_fake{n:06d}", "status": "completed",
                 "role": "assistant", "content": [text]}]  # fmt: skip
    offered = _offered(body)
    items = []
    for k, (tool, given) in enumerate(step.calls()):
        if tool not in offered:
            raise AssertionError(f"the script calls {tool!r}; Codex offered {sorted(offered)}")
        if offered[tool].get("type") == "custom":  # a freeform tool: its input is text
            items.append({"type": "custom_tool_call", "id": f"ctc_fake{n:06d}{k}",
                          "status": "completed", "call_id": f"call_fake{n:06d}{k}",
                          "name": tool, "input": given["input"]})  # fmt: skip
        else:
            items.append({"type": "function_call", "id": f"fc_fake{n:06d}{k}",
                          "status": "completed", "call_id": f"call_fake{n:06d}{k}", "name": tool,
                          "arguments": json.dumps(given)})  # fmt: skip
    return items


def _events(response: dict[str, Any]) -> list[tuple[str | None, Any]]:
    seq = itertools.count()
    events: list[tuple[str | None, Any]] = []

    def event(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    started = {**response, "status": "in_progress", "output": []}
    event("response.created", response=started)
    event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        event("response.output_item.added", output_index=index, item=added)
        if item["type"] == "message":
            text = item["content"][0]["text"]
            event("response.output_text.delta", item_id=item["id"], output_index=index,
                  content_index=0, delta=text)  # fmt: skip
        event("response.output_item.done", output_index=index, item=item)
    event("response.completed", response=response)
    return events
