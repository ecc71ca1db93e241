"""A fake Gemini API (generativelanguage) for the real Gemini CLI (``GOOGLE_GEMINI_BASE_URL``).

Written to Google's published references:

- ``models.streamGenerateContent``
  (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent):
  ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` with ``contents`` (turns of
  ``role`` ``user``/``model`` holding ``parts``: ``text``, ``functionCall``,
  ``functionResponse``), ``tools`` (``functionDeclarations``), ``systemInstruction``,
  ``generationConfig``; the key in ``x-goog-api-key``. With ``alt=sse`` each chunk is a
  ``GenerateContentResponse`` as ``data:`` (``candidates[].content.parts``,
  ``finishReason``, ``usageMetadata``, ``modelVersion``); ``models.generateContent`` is the
  same answer whole, and ``models.countTokens`` answers ``{"totalTokens": N}``.
- Function calling (https://ai.google.dev/gemini-api/docs/function-calling): a model turn's
  ``functionCall`` parts are answered by a user turn with as many ``functionResponse``
  parts — otherwise 400 "Please ensure that the number of function response parts is equal
  to the number of function call parts of the function call turn."
- Errors (https://ai.google.dev/gemini-api/docs/troubleshooting, and the google.rpc
  ``Status`` shape): ``{"error": {"code", "message", "status"}}`` — 400
  ``INVALID_ARGUMENT`` (a bad key: ``API_KEY_INVALID`` in ``details``), 403
  ``PERMISSION_DENIED``, 429 ``RESOURCE_EXHAUSTED``, 500 ``INTERNAL``, 503 ``UNAVAILABLE``.

Every request that offers tools takes the script's next step (:mod:`wire`).
"""

from __future__ import annotations

import json
from typing import Any

from wire import Api, Call, Fail, Reply, Say, Seen

STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
MESSAGES = {
    400: "API key not valid. Please pass a valid API key.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "An internal error has occurred. Please retry or report in "
    "https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": status, "message": message or MESSAGES.get(status, "error"),
                             "status": STATUS.get(status, "UNKNOWN")}  # fmt: skip
    if status == 400 and message is None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]  # fmt: skip
    return {"error": error}


class GeminiApi(Api):
    name = "gemini"
    api_key = "fake-gemini-key-for-tests"

    def answer(self, seen: Seen) -> Reply:
        path, _, query = seen.path.partition("?")
        method = path.rsplit(":", 1)[-1] if ":" in path else ""
        if not path.startswith(("/v1beta/models/", "/v1/models/")) or method not in (
            "streamGenerateContent", "generateContent", "countTokens",
        ):  # fmt: skip
            return self.reject(seen, 404, f"{seen.method} {path}", error_body(404, "Not found"))
        key = seen.headers.get("x-goog-api-key") or dict(
            p.split("=", 1) for p in query.split("&") if "=" in p
        ).get("key")
        if key != self.api_key:
            return self.reject(seen, 400, "bad key", error_body(400))
        body = seen.body
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return self.reject(seen, 400, "no contents", error_body(400, "contents is required"))
        if method == "countTokens":
            return Reply(200, {"totalTokens": 42})
        problem = _problem(body["contents"])
        if problem:
            return self.reject(seen, 400, problem, error_body(400, problem))
        # Side requests (Gemini CLI's model router asks a small model for a JSON verdict)
        # get an answer of the shape their schema asks for, and take no step.
        step = self.next_step(seen) if _declared(body) else Say(json.dumps(_instance(body)))
        if step is None:
            step = Say("(the test's script has no more steps)")
        if isinstance(step, Fail):
            headers = {"retry-after": step.retry_after} if step.retry_after else {}
            return Reply(step.status, error_body(step.status), headers)
        answer = _response(body, step, path)
        if method == "streamGenerateContent" and "alt=sse" in query:
            return Reply(200, events=[(None, answer)])
        if method == "streamGenerateContent":
            return Reply(200, [answer])
        return Reply(200, answer)

    def function_calls(self) -> list[tuple[dict[str, Any], Any]]:
        """Each function call made, with the response the CLI sent back for it (None: none)."""
        found: list[tuple[dict[str, Any], Any]] = []
        seen_calls: set[str] = set()
        turns = self.turns()
        for seen in turns:
            contents = seen.body["contents"]
            for n, turn in enumerate(contents):
                for part in turn.get("parts") or []:
                    call = part.get("functionCall")
                    if not call:
                        continue
                    ident = f"{call.get('name')}:{call.get('id')}:{n}"
                    if ident in seen_calls:
                        continue
                    seen_calls.add(ident)
                    answer = None
                    if n + 1 < len(contents):
                        for reply in contents[n + 1].get("parts") or []:
                            given = reply.get("functionResponse")
                            if given and given.get("name") == call.get("name"):
                                answer = given.get("response")
                    found.append((call, answer))
        return found


def _declared(body: dict[str, Any]) -> bool:
    return any(tool.get("functionDeclarations") for tool in body.get("tools") or [])


def _problem(contents: list[Any]) -> str | None:
    pending = 0  # functionCall parts of the model turn before
    for n, turn in enumerate(contents):
        role = turn.get("role", "user") if isinstance(turn, dict) else None
        if role not in ("user", "model"):
            return f"contents[{n}].role: Please use a valid role: user, model."
        parts = turn.get("parts")
        if not isinstance(parts, list) or not parts:
            return f"contents[{n}].parts must not be empty"
        answers = sum(1 for p in parts if isinstance(p, dict) and "functionResponse" in p)
        if role == "user" and pending and answers != pending:
            return ("Please ensure that the number of function response parts is equal to the "
                    "number of function call parts of the function call turn.")  # fmt: skip
        if answers and not pending:
            return ("Please ensure that function response turn comes immediately after a "
                    "function call turn.")  # fmt: skip
        calls = sum(1 for p in parts if isinstance(p, dict) and "functionCall" in p)
        pending = calls if role == "model" else 0
    return None


def _response(body: dict[str, Any], step: Say | Call, path: str) -> dict[str, Any]:
    declared = {d["name"] for tool in body.get("tools") or []
                for d in tool.get("functionDeclarations") or []}  # fmt: skip
    if isinstance(step, Say):
        parts: list[dict[str, Any]] = [{"text": step.text}]
    else:
        parts = []
        for tool, given in step.calls():
            if tool not in declared:
                raise AssertionError(f"the script calls {tool!r}; declared: {sorted(declared)}")
            parts.append({"functionCall": {"name": tool, "args": given}})
    model = path.split("/models/", 1)[-1].split(":", 1)[0]
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20,
                          "totalTokenCount": 120},
        "modelVersion": model,
        "responseId": "fake-response",
    }  # fmt: skip


def _instance(body: dict[str, Any]) -> Any:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return _of(schema) if isinstance(schema, dict) else "ok"


def _of(schema: dict[str, Any]) -> Any:
    """The smallest value ``schema`` accepts (its required properties, first enum values)."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _of(props.get(k) or {}) for k in schema.get("required") or props}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "ok"
