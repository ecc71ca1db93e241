"""What one agent run cost, and whether it hit an outage, from Claude's own result.

``claude -p --output-format json`` ends its output with one JSON object (``"type":
"result"``) carrying ``total_cost_usd``, ``is_error`` and ``result``; ``--output-format
stream-json`` ends with the same object on its last line. This is a small reader of its own
for SPEC section 19's budget and crash loop, kept apart on purpose: section 18's full reader
of that result (session id, subtype, permission denials) is built elsewhere, and the two
are to become one — :func:`claude_result` is the one function to swap.

Only the end of the output is read (the runner keeps its last 8 kB): a result too long to
fit is still found by its ``total_cost_usd`` field alone.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

_COST = re.compile(r'"total_cost_usd"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')
_OUTAGE = re.compile(r"rate.?limit|overloaded|\b529\b|\b429\b|usage limit", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ClaudeRun:
    cost_usd: float | None  # None: the output carries no result (not Claude, or cut short)
    outage: bool  # Claude's result is an error naming a rate limit or an overload


def claude_result(output: str) -> dict[str, Any] | None:
    """The last ``{"type": "result", …}`` object at the end of ``output``, if one is there."""
    for line in reversed(output.strip().splitlines()[-50:]):
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "result":
            return data
    return None


def claude_run(output: str) -> ClaudeRun:
    """The cost and outage of one agent run, from the Claude result its output ends with."""
    result = claude_result(output)
    if result is None:
        found = _COST.findall(output[-4096:])
        cost = float(found[-1]) if found else None
        return ClaudeRun(cost if cost is not None and _sane(cost) else None, False)
    raw = result.get("total_cost_usd")
    cost = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    text = f"{result.get('subtype', '')} {result.get('result', '')} {result.get('error', '')}"
    outage = bool(result.get("is_error")) and bool(_OUTAGE.search(text))
    return ClaudeRun(cost if cost is not None and _sane(cost) else None, outage)


def _sane(cost: float) -> bool:
    return math.isfinite(cost) and cost >= 0
