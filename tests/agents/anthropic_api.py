"""A fake Anthropic Messages API for the real Claude Code (``ANTHROPIC_BASE_URL``).

Written to Anthropic's published references:

- Messages (https://docs.anthropic.com/en/api/messages): ``POST /v1/messages`` with
  ``model``, ``max_tokens`` and ``messages`` required; the ``x-api-key`` (or
  ``Authorization: Bearer``) and ``anthropic-version`` headers required.
- Streaming messages (https://docs.anthropic.com/en/docs/build-with-claude/streaming): with
  ``stream: true`` the answer is server-sent events ``message_start``,
  ``content_block_start``, ``ping``, ``content_block_delta`` (``text_delta`` or
  ``input_json_delta`` with ``partial_json``), ``content_block_stop``, ``message_delta``
  (``stop_reason``, ``usage.output_tokens``) and ``message_stop``.
- Tool use (https://docs.anthropic.com/en/docs/build-with-claude/tool-use/overview,
  "Handling tool use and tool result content blocks"): a ``tool_use`` block's id must be
  answered by a ``tool_result`` block in the very next user message, or the request is
  refused (400, "tool_use ids were found without tool_result blocks immediately after"); a
  ``tool_result`` must answer a ``tool_use`` of the message before it.
- Errors (https://docs.anthropic.com/en/api/errors): the body is ``{"type": "error",
  "error": {"type": …, "message": …}, "request_id": …}`` with ``invalid_request_error``
  (400), ``authentication_error`` (401), ``billing_error`` (402), ``permission_error``
  (403), ``not_found_error`` (404), ``rate_limit_error`` (429, with ``retry-after``),
  ``api_error`` (500) and ``overloaded_error`` (529); every answer carries a
  ``request-id`` header.
- Token counting (https://docs.anthropic.com/en/api/messages-count-tokens):
  ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": N}``.

The requests that run the agent's loop are those that offer tools; each takes the
script's next step (:mod:`wire`). Claude Code's side requests (a session title, a quota
check: no tools) get a short text of their own and take no step.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from wire import Api, Call, Fail, Reply, Say, Seen

ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
MESSAGES = {
    401: "invalid x-api-key",
    402: "Your credit balance is too low to access the Anthropic API.",
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}
_ids = itertools.count(1)


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind = ERRORS.get(status, "api_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message or MESSAGES.get(status, kind)},
        "request_id": f"req_fake{next(_ids):08d}",
    }


class AnthropicApi(Api):
    name = "anthropic"
    api_key = "sk-ant-fake-key-for-tests"

    def answer(self, seen: Seen) -> Reply:
        headers = {"request-id": f"req_fake{next(_ids):08d}"}
        path = seen.path.split("?", 1)[0]
        if seen.method != "POST" or path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._reject(seen, 404, f"{seen.method} {path}: not found", headers)
        key = seen.headers.get("x-api-key") or seen.headers.get("authorization", "")
        if key.removeprefix("Bearer ") != self.api_key:
            return self._reject(seen, 401, "invalid x-api-key", headers)
        if not seen.headers.get("anthropic-version"):
            return self._reject(seen, 400, "anthropic-version: header is required", headers)
        body = seen.body
        if not isinstance(body, dict):
            return self._reject(seen, 400, "the body must be a JSON object", headers)
        betas = {b.strip() for b in seen.headers.get("anthropic-beta", "").split(",")}
        problem = _problem(body, counting=path.endswith("count_tokens"), betas=betas)
        if problem:
            return self._reject(seen, 400, problem, headers)
        if path.endswith("count_tokens"):
            return Reply(200, {"input_tokens": 42}, headers)
        step = self.next_step(seen) if body.get("tools") else Say("ok")
        if step is None:
            step = Say("(the test's script has no more steps)")
        if isinstance(step, Fail):
            if step.retry_after is not None:
                headers["retry-after"] = step.retry_after
            return Reply(step.status, error_body(step.status), headers)
        message = _message(body, step)
        if body.get("stream"):
            return Reply(200, headers=headers, events=_events(message))
        return Reply(200, message, headers)

    def _reject(self, seen: Seen, status: int, message: str, headers: dict[str, str]) -> Reply:
        reply = self.reject(seen, status, message, error_body(status, message))
        reply.headers.update(headers)
        return reply

    # -- what the tests read -------------------------------------------------------------

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block the agent sent back, in order, once each."""
        found: dict[str, dict[str, Any]] = {}
        for seen in self.turns():
            for message in seen.body.get("messages", []):
                for block in _blocks(message):
                    if block.get("type") == "tool_result":
                        found.setdefault(block["tool_use_id"], block)
        return list(found.values())


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _problem(body: dict[str, Any], *, counting: bool, betas: set[str]) -> str | None:
    """Why the real API would refuse ``body`` (400), or None. A ``system`` message amid the
    conversation is accepted only under the beta that allows it
    (``mid-conversation-system-…`` in ``anthropic-beta``), and is no turn of its own."""
    mid_system = any(b.startswith("mid-conversation-system-") for b in betas)
    required = ("model", "messages") if counting else ("model", "max_tokens", "messages")
    for name in required:
        if name not in body:
            return f"{name}: Field required"
    if not counting and (not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1):
        return "max_tokens: must be a positive integer"
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    pending: set[str] = set()
    for n, message in enumerate(messages):
        roles = ("user", "assistant", "system") if mid_system and n else ("user", "assistant")
        if not isinstance(message, dict) or message.get("role") not in roles:
            return f"messages.{n}.role: Input should be 'user' or 'assistant'"
        if message["role"] == "system":
            if not isinstance(message.get("content"), str | list):
                return f"messages.{n}.content: Input should be a valid string or list"
            continue
        blocks = _blocks(message)
        results = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
        if message["role"] == "user":
            if pending - results:
                ids = ", ".join(sorted(pending - results))
                return (
                    f"messages.{n}: tool_use ids were found without tool_result blocks "
                    f"immediately after: {ids}. Each tool_use block must have a corresponding "
                    "tool_result block in the next message."
                )
            if results - pending:
                return f"messages.{n}.content: unexpected tool_use_id found in tool_result blocks"
            pending = set()
        else:
            if results:
                return f"messages.{n}: tool_result blocks are only allowed in user messages"
            if pending:
                ids = ", ".join(sorted(pending))
                return f"messages.{n}: tool_use ids were found without tool_result blocks: {ids}"
            pending = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    if messages[0].get("role") != "user":
        return "messages.0.role: the first message must use the user role"
    return None


def _message(body: dict[str, Any], step: Say | Call) -> dict[str, Any]:
    n = next(_ids)
    if isinstance(step, Say):
        content: list[dict[str, Any]] = [{"type": "text", "text": step.text}]
        stop = "end_turn"
    else:
        content = [
            {"type": "tool_use", "id": f"toolu_fake{n:06d}{k}", "name": tool, "input": given}
            for k, (tool, given) in enumerate(step.calls())
        ]
        stop = "tool_use"
    return {
        "id": f"msg_fake{n:08d}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 100,
            "output_tokens": 20,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _events(message: dict[str, Any]) -> list[tuple[str | None, Any]]:
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**message["usage"], "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start",
             {"type": "content_block_start", "index": index, "content_block": opened}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                           "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return events
