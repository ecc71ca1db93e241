"""The result ``claude -p --output-format json`` prints at the end of its output (SPEC §18).

Claude Code's headless docs (https://code.claude.com/docs/en/headless, "Get structured
output") and its hooks reference ("Defer a tool call for later") give the object: ``type:
"result"``, ``subtype`` (``success``, ``error_max_turns``, ``error_during_execution``, …),
``is_error``, ``session_id``, ``total_cost_usd``, ``num_turns``, ``permission_denials``
(``tool_name``, ``tool_use_id``, ``tool_input``), and on a defer ``stop_reason:
"tool_deferred"`` with ``deferred_tool_use`` (``id``, ``name``, ``input``). With
``--output-format stream-json`` it is the last line of the stream; either way it ends the
output. :func:`read_result` finds it there, or says there is none.

A turn that ended on an API failure is a result too (Claude Code 2.1: ``is_error: true``,
``subtype: "success"``, ``api_error_status`` the HTTP status — 429, 401, 529, …): loopkit
reads the status, never the ``result`` prose. :func:`failure_kind` sorts a failure, from a
result or from the ``StopFailure`` hook's ``error`` (``rate_limit``, ``server_error``, …),
into a dependency down (wait and try again) or a missing credential (ask at once).

Only what a supervisor acts on is kept: never the ``result`` text (the agent's last words,
which may quote anything), and of each denial only the tool's name and call id.
"""

from __future__ import annotations

import json
import math
import re

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LOOK_BACK = 64  # candidate starts of the result object tried, from the end
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
# The StopFailure hook's ``error`` types (and a result's ``subtype``/``error``) by what they
# mean for the loop. Claude Code reports a 529 or a 500 as ``server_error``.
DEPENDENCY = frozenset({"rate_limit", "overloaded", "server_error", "api_error", "timeout"})
CREDENTIAL = frozenset(
    {
        "authentication_failed",
        "billing_error",
        "oauth_org_not_allowed",
        "account_on_hold",
        "cloud_credential_error",
        "permission_error",
    }
)
DEPENDENCY_STATUS = frozenset({408, 409, 429})  # and every 5xx (529: overloaded)
CREDENTIAL_STATUS = frozenset({401, 402, 403})


def failure_kind(error: str | None, status: int | None = None) -> str:
    """``dependency`` (the API is down or limits us: wait and try again), ``credential`` (it
    refuses who we are or what we pay: ask at once) or ``other``. ``status`` (an HTTP
    status) decides when given; else the error type's name."""
    if status is not None:
        if status in CREDENTIAL_STATUS:
            return "credential"
        if status in DEPENDENCY_STATUS or 500 <= status <= 599:
            return "dependency"
    if error in CREDENTIAL:
        return "credential"
    if error in DEPENDENCY:
        return "dependency"
    return "other"


@record(frozen=True, slots=True)
class Denial:
    tool_name: str
    tool_use_id: str | None


@record(frozen=True, slots=True)
class Result:
    is_error: bool
    subtype: str | None
    session_id: str | None  # None when missing or not an id a command line may carry
    total_cost_usd: float | None
    num_turns: int | None
    stop_reason: str | None
    permission_denials: tuple[Denial, ...]
    deferred_tool: str | None  # deferred_tool_use.name, on stop_reason "tool_deferred"
    deferred_tool_id: str | None
    api_error_status: int | None = None  # the HTTP status of an API failure that ended it

    @property
    def deferred(self) -> bool:
        return self.stop_reason == "tool_deferred" and not self.is_error

    def failure(self) -> tuple[str, str] | None:
        """``(kind, description)`` when the turn ended on an API failure (a dependency down
        or a credential refused, :func:`failure_kind`), else None."""
        if not self.is_error:
            return None
        kind = failure_kind(self.subtype, self.api_error_status)
        if kind == "other":
            return None
        said = f"HTTP {self.api_error_status}" if self.api_error_status else None
        error = self.subtype if self.subtype and self.subtype != "success" else None
        return kind, " ".join(p for p in (error, f"({said})" if error and said else said) if p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "is_error": self.is_error,
            "subtype": self.subtype,
            "session_id": self.session_id,
            "total_cost_usd": self.total_cost_usd,
            "num_turns": self.num_turns,
            "stop_reason": self.stop_reason,
            "permission_denials": [
                {"tool_name": d.tool_name, "tool_use_id": d.tool_use_id}
                for d in self.permission_denials
            ],
            "deferred_tool": self.deferred_tool,
            "api_error_status": self.api_error_status,
        }


def session_id(value: object) -> str | None:
    """``value`` when it is a session id safe to put on a command line, else None."""
    if isinstance(value, str) and _SESSION_ID.fullmatch(value):
        return value
    return None


def from_event(data: object) -> Result | None:
    """The result when ``data`` (one decoded stream-json event) is one, else None."""
    return _result(data) if isinstance(data, dict) else None


def read_result(text: str) -> Result | None:
    """The result object that ends ``text`` (only whitespace may follow it), else None.

    The object starts a line (``json`` prints it alone; ``stream-json`` prints one object a
    line, the result last). Whatever the agent printed before it is not read.
    """
    data = ending_object(text)
    return None if data is None else _result(data)


def ending_object(text: str) -> dict[str, Any] | None:
    """The JSON object that ends ``text`` and starts a line (only whitespace after it), as
    decoded — whatever its type — else None."""
    end = len(text.rstrip())
    if end == 0 or text[end - 1] != "}":
        return None
    decoder = json.JSONDecoder()
    start = text.rfind("\n{", 0, end)
    for _ in range(LOOK_BACK):
        begin = start + 1 if start >= 0 else 0
        if text.startswith("{", begin):
            try:
                value, stop = decoder.raw_decode(text, begin)
            except ValueError:
                value, stop = None, -1
            if stop == end and isinstance(value, dict):
                return value
        if start < 0:
            return None
        start = text.rfind("\n{", 0, start)
    return None


def _result(data: dict[str, Any]) -> Result | None:
    if data.get("type") != "result":
        return None
    denials = data.get("permission_denials")
    deferred = data.get("deferred_tool_use")
    deferred = deferred if isinstance(deferred, dict) else {}
    cost = data.get("total_cost_usd")
    turns = data.get("num_turns")
    status = data.get("api_error_status")
    return Result(
        is_error=data.get("is_error") is True,
        subtype=_text(data.get("subtype")),
        session_id=session_id(data.get("session_id")),
        total_cost_usd=float(cost)
        if isinstance(cost, int | float) and not isinstance(cost, bool) and math.isfinite(cost)
        else None,
        num_turns=turns if isinstance(turns, int) and not isinstance(turns, bool) else None,
        stop_reason=_text(data.get("stop_reason")),
        permission_denials=tuple(
            Denial(str(d["tool_name"])[:200], _text(d.get("tool_use_id")))
            for d in (denials if isinstance(denials, list) else [])
            if isinstance(d, dict) and isinstance(d.get("tool_name"), str)
        ),
        deferred_tool=_text(deferred.get("name")),
        deferred_tool_id=_text(deferred.get("id")),
        api_error_status=status
        if isinstance(status, int) and not isinstance(status, bool) and 100 <= status <= 599
        else None,
    )


def _text(value: object) -> str | None:
    return value[:200] if isinstance(value, str) else None
