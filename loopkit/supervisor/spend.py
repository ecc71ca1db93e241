"""What one agent run cost, and whether it hit an outage, from Claude's own result.

``claude -p --output-format json`` ends its output with one JSON object (``"type":
"result"``) carrying ``total_cost_usd``, ``is_error`` and ``result``; ``--output-format
stream-json`` ends with the same object on its last line. This is a small reader of its own
for SPEC section 19's budget and crash loop, on :mod:`loopkit.agentresult`'s reader of it
(section 18).

Only the end of the output is read (the runner keeps its last 8 kB): a result too long to
fit is still found by its ``total_cost_usd`` field alone.
"""

from __future__ import annotations

import math
import re

from loopkit.agentresult import read_result
from loopkit.datarecord import record

_COST = re.compile(r'"total_cost_usd"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')
_OUTAGE = re.compile(r"rate.?limit|overloaded|\b529\b|\b429\b|usage limit", re.IGNORECASE)


@record(frozen=True, slots=True)
class ClaudeRun:
    cost_usd: float | None  # None: the output carries no result (not Claude, or cut short)
    outage: bool  # Claude's result is an error naming a rate limit or an overload


def claude_run(output: str) -> ClaudeRun:
    """The cost and outage of one agent run, from the Claude result its output ends with
    (:func:`loopkit.agentresult.read_result`, the one reader of it)."""
    result = read_result(output)
    if result is None:
        found = _COST.findall(output[-4096:])
        cost = float(found[-1]) if found else None
        return ClaudeRun(cost if cost is not None and _sane(cost) else None, False)
    cost = result.total_cost_usd
    # The result's own text is not kept by the reader: the error is read from the tail.
    outage = result.is_error and bool(_OUTAGE.search(f"{result.subtype} {output[-4096:]}"))
    return ClaudeRun(cost if cost is not None and _sane(cost) else None, outage)


def _sane(cost: float) -> bool:
    return math.isfinite(cost) and cost >= 0
