"""What one agent run cost, whether its API was down, and which call of its was refused —
read from what the agent printed (SPEC §19, §25). The one reader of the three CLIs' usage.

- **Claude Code** (``claude -p --output-format json`` or ``stream-json``; its headless
  docs): the output ends with the ``"type": "result"`` object — ``total_cost_usd`` (the
  dollars), ``is_error`` with the error in ``result``, ``permission_denials`` (``tool_name``,
  ``tool_input``) (:func:`loopkit.agentresult.ending_object` finds it).
- **Codex** (``codex exec --json``; ``codex-rs/exec/src/exec_events.rs``): one event a line.
  Each ``turn.completed`` carries ``usage`` (``input_tokens``, ``cached_input_tokens`` — a
  part of the input —, ``output_tokens``); ``turn.failed`` and ``error`` carry the error's
  ``message``; a ``command_execution`` item whose ``status`` is ``declined`` was refused.
- **Gemini CLI** (``gemini -p --output-format json``; its headless reference and
  ``packages/core/src/output/types.ts``): one object with ``response``, ``stats.models`` —
  per model ``tokens`` (``prompt``, of which ``cached``; ``candidates``, ``thoughts``) — and
  an optional ``error`` (``type``, ``message``); ``--output-format stream-json`` ends with a
  ``"type": "result"`` event (``status``, ``error``, ``stats``: ``input_tokens``, ``cached``,
  ``output_tokens``), names the model in its ``init`` event, and reports each call as a
  ``tool_use`` (``tool_name``, ``tool_id``, ``parameters``) and its ``tool_result``
  (``status``, ``error``): one in error whose error says it was denied was refused.

Codex and Gemini report tokens, not dollars: they are priced by :data:`PRICES` (list prices
per million tokens, input, cached input, output; a model not listed is priced as the family's
default: ``gpt-5-codex``, ``gemini-2.5-pro``) — an estimate, stated as one in the docs.

A run that failed (a non-zero exit, an error result, a failed turn) and names a rate limit,
an overload, an exhausted quota or a 429/503/529 is an *outage*, whether the agent said so
in JSON or in plain text in its last lines; a run that succeeded is never one, whatever its
work printed. Only the end of the output is read (the runner keeps its last 8 kB): a result
whose start was cut off is still found by its ``total_cost_usd`` or its ``stats``.
"""

from __future__ import annotations

import json
import math
import re

from loopkit.agentresult import ending_object
from loopkit.datarecord import record
from loopkit.message import fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# USD per million tokens: input, cached input, output (list prices, December 2025).
PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-5-codex": (1.25, 0.125, 10.0),
    "gpt-5-mini": (0.25, 0.025, 2.0),
    "gpt-5-nano": (0.05, 0.005, 0.4),
    "gpt-5": (1.25, 0.125, 10.0),
    "codex-mini": (1.5, 0.375, 6.0),
    "o4-mini": (1.1, 0.275, 4.4),
    "gemini-2.5-pro": (1.25, 0.125, 10.0),
    "gemini-2.5-flash-lite": (0.10, 0.01, 0.40),
    "gemini-2.5-flash": (0.30, 0.03, 2.50),
}
CODEX_MODEL = "gpt-5-codex"  # codex exec --json does not name its model
GEMINI_MODEL = "gemini-2.5-pro"

_COST = re.compile(r'"total_cost_usd"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')
_OUTAGE = re.compile(
    r"rate.?limit|overloaded|too many requests|usage limit|quota|resource.?exhausted"
    r"|service unavailable|\b(?:429|502|503|529)\b"
    r"|API Error: (?:Connection error|Request timed out)",
    re.IGNORECASE,
)
_STATUS = re.compile(r"\b(429|503|529)\b")
_KIND = re.compile(
    r"overloaded(?:_error)?|rate[ _-]?limit(?:_error| reached| exceeded)?|resource_exhausted"
    r"|too many requests|usage limit(?: reached)?|quota(?: exceeded)?|service unavailable"
    r"|connection error|request timed out",
    re.IGNORECASE,
)
_REFUSED = re.compile(r"denied|not allowed|permission|declined|rejected", re.IGNORECASE)
_STATS = re.compile(r'"stats"\s*:\s*\{')
_LAST_LINES = 15


@record(frozen=True, slots=True)
class AgentRun:
    cost_usd: float | None  # None: the output reports no usage (not one of these, or cut)
    outage: str  # the API error that ended a failed run ("": none)
    denied: str  # the first call refused: "Bash(git push)" ("": none)


def price(model: str, *, input_tokens: int, cached: int, output: int) -> float:
    """Dollars for the tokens, at ``model``'s price (its family's default when unlisted);
    ``cached`` is the part of ``input_tokens`` read from the cache."""
    name = model.lower().rsplit("/", 1)[-1]
    known = sorted((m for m in PRICES if name.startswith(m)), key=len, reverse=True)
    fallback = GEMINI_MODEL if name.startswith("gemini") else CODEX_MODEL
    per_input, per_cached, per_output = PRICES[known[0] if known else fallback]
    fresh = max(0, input_tokens - cached)
    return (fresh * per_input + min(cached, input_tokens) * per_cached + output * per_output) / 1e6


def agent_run(output: str, *, exit_code: int | None = 0) -> AgentRun:
    """The cost, outage and refused call of one run that printed ``output`` and exited
    ``exit_code`` (None: it did not exit by itself)."""
    failed = exit_code not in (0, None)
    cost: float | None = None
    errors: list[str] = []
    denied = ""
    events = _events(output)
    ending = ending_object(output)
    if ending is not None and ending.get("type") == "result" and "total_cost_usd" in ending:
        cost, denied = _claude(ending, errors)
        failed = failed or ending.get("is_error") is True
    elif any(event.get("type") in ("turn.completed", "turn.failed", "thread.started")
             for event in events):  # fmt: skip
        cost, denied, failed = _codex(events, errors, failed)
    else:
        cost, failed = _gemini(output, ending, events, errors, failed)
        denied = _gemini_denied(events)
    if cost is None:
        found = _COST.findall(output[-4096:])
        cost = float(found[-1]) if found else None
    outage = ""
    if failed:
        lines = [line.strip() for line in output.splitlines() if line.strip()][-_LAST_LINES:]
        for text in [*errors, *reversed(lines)]:
            if _OUTAGE.search(text):
                outage = _concise(text)
                break
    sane = cost is not None and math.isfinite(cost) and cost >= 0
    return AgentRun(cost if sane else None, outage, denied)


def _concise(text: str) -> str:
    """An API error as a human reads it: its status and kind (``529 overloaded_error``),
    else the line itself, folded."""
    status, kind = _STATUS.search(text), _KIND.search(text)
    said = " ".join(m.group(0) for m in (status, kind) if m is not None)
    return said if kind is not None else fold(text, 80)


def _events(output: str) -> list[dict[str, Any]]:
    """The lines of ``output`` that are JSON objects (a JSONL stream's events)."""
    found = []
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                found.append(value)
    return found


def _claude(result: dict[str, Any], errors: list[str]) -> tuple[float | None, str]:
    cost = _number(result.get("total_cost_usd"))
    if result.get("is_error") is True:
        errors.append(str(result.get("result") or result.get("subtype") or ""))
    denials = result.get("permission_denials")
    denied = ""
    if isinstance(denials, list):
        for denial in denials:
            if isinstance(denial, dict) and isinstance(denial.get("tool_name"), str):
                denied = _call(denial["tool_name"], denial.get("tool_input"))
                break
    return cost, denied


def _codex(
    events: list[dict[str, Any]], errors: list[str], failed: bool
) -> tuple[float | None, str, bool]:
    cost: float | None = None
    denied = ""
    for event in events:
        kind = event.get("type")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            usage = event["usage"]
            cost = (cost or 0.0) + price(
                CODEX_MODEL,
                input_tokens=_int(usage.get("input_tokens")),
                cached=_int(usage.get("cached_input_tokens")),
                output=_int(usage.get("output_tokens")),
            )
        elif kind in ("turn.failed", "error"):
            failed = True
            error = event.get("error") if kind == "turn.failed" else event
            if isinstance(error, dict):
                errors.append(str(error.get("message") or ""))
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "command_execution" and item.get("status") == "declined":
                denied = denied or _call("shell", {"command": item.get("command")})
    return cost, denied, failed


def _gemini(
    output: str,
    ending: dict[str, Any] | None,
    events: list[dict[str, Any]],
    errors: list[str],
    failed: bool,
) -> tuple[float | None, bool]:
    model = next((str(e["model"]) for e in events if e.get("type") == "init" and e.get("model")),
                 GEMINI_MODEL)  # fmt: skip
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is not None:  # stream-json
        if result.get("status") == "error":
            failed = True
        _error(result.get("error"), errors)
        stats = result.get("stats")
        if not isinstance(stats, dict):
            return None, failed
        return price(model, input_tokens=_int(stats.get("input_tokens")),
                     cached=_int(stats.get("cached")),
                     output=_int(stats.get("output_tokens"))), failed  # fmt: skip
    if ending is not None and isinstance(ending.get("error"), dict):
        failed = True
        _error(ending["error"], errors)
    stats = ending.get("stats") if ending is not None else _stats(output)
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict) or not models:
        return None, failed
    cost = 0.0
    for name, used in models.items():
        tokens = used.get("tokens") if isinstance(used, dict) else None
        if isinstance(tokens, dict):
            said = _int(tokens.get("candidates")) + _int(tokens.get("thoughts"))
            cost += price(str(name), input_tokens=_int(tokens.get("prompt")),
                          cached=_int(tokens.get("cached")), output=said)  # fmt: skip
    return cost, failed


def _gemini_denied(events: list[dict[str, Any]]) -> str:
    """The first tool call Gemini's stream reports refused (a ``tool_result`` in error whose
    error says so), as its ``tool_use`` named it."""
    calls = {e.get("tool_id"): e for e in events if e.get("type") == "tool_use"}
    for event in events:
        error = event.get("error")
        if event.get("type") != "tool_result" or event.get("status") != "error":
            continue
        said = ""
        if isinstance(error, dict):
            said = f"{error.get('type', '')} {error.get('message', '')}"
        if _REFUSED.search(said):
            call = calls.get(event.get("tool_id"), {})
            return _call(str(call.get("tool_name") or "tool"), call.get("parameters"))
    return ""


def _stats(output: str) -> dict[str, Any] | None:
    """Gemini's ``stats`` object, found in an output whose start was cut off."""
    decoder = json.JSONDecoder()
    for match in reversed(list(_STATS.finditer(output))):
        try:
            value, _ = decoder.raw_decode(output, match.end() - 1)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _error(error: object, errors: list[str]) -> None:
    if isinstance(error, dict):
        errors.append(f"{error.get('type') or ''} {error.get('message') or ''}".strip())


def _call(tool: str, given: object) -> str:
    """A refused call as a human reads it: ``Bash(git push --force)``."""
    detail = ""
    if isinstance(given, dict):
        for name in ("command", "file_path", "path", "url", "pattern", "query"):
            if isinstance(given.get(name), str):
                detail = given[name]
                break
        else:
            detail = next((v for v in given.values() if isinstance(v, str)), "")
    return f"{fold(tool, 40)}({fold(detail, 80)})"


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
