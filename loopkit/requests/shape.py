"""The shape a request record must have before any code touches it.

A record is a file anyone can edit, restore from a backup or break. Every field loopkit
reads is checked here, once, at load: a wrong shape is a one-line error naming the file and
the field (``BadInput``, exit 65), never an exception deep in some command. Fields loopkit
does not know are not looked at (they are kept and written back unchanged).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from loopkit import clock
from loopkit.errors import BadInput

Check = Callable[[Any], str | None]  # None when fine, else what it must be


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _maybe(check: Check) -> Check:
    def maybe(value: Any) -> str | None:
        problem = check(value)
        return None if value is None or problem is None else f"{problem} or null"

    return maybe


def _time(value: Any) -> str | None:
    if not isinstance(value, str):
        return "an ISO-8601 time string"
    try:
        clock.parse_iso(value)
    except ValueError:
        return "an ISO-8601 time such as 2026-12-03T09:00:00Z"
    return None


def _https(value: Any) -> str | None:
    ok = isinstance(value, str) and value.startswith("https://")
    return None if ok else "an https:// URL"


def _int(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53
    return None if ok else "a whole number ≥ 0"


def _number(value: Any) -> str | None:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value < 10**9
    )
    return None if ok else "a finite number ≥ 0"


def _bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _one_of(*allowed: str) -> Check:
    def one_of(value: Any) -> str | None:
        return None if value in allowed else "one of " + ", ".join(allowed)

    return one_of


def _object(fields: dict[str, Check] | None = None, values: Check | None = None) -> Check:
    """An object whose listed ``fields`` (when present) pass their checks."""

    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "an object"
        for key, sub in (fields or {}).items():
            if key in value and (problem := sub(value[key])):
                return f"an object whose {key!r} is {problem}"
        if values is not None:
            for key, item in value.items():
                if problem := values(item):
                    return f"an object whose {key!r} is {problem}"
        return None

    return check


def _list(item: Check) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return "a list"
        for number, one in enumerate(value):
            if problem := item(one):
                return f"a list whose item {number + 1} is {problem}"
        return None

    return check


_OPT_TEXT = _maybe(_text)

FIELDS: dict[str, Check] = {
    "schema_version": _maybe(_int),
    "request_id": _text,
    "prompt": _text,
    "created_at": _time,
    "updated_at": _time,
    "request_key": _OPT_TEXT,
    "kind": _one_of("question", "approval", "review"),
    "situation": _text,
    "policy": _text,
    "options": _maybe(
        _list(_object({"label": _text, "value": _OPT_TEXT, "consequence": _OPT_TEXT}))
    ),
    "recommendation": _OPT_TEXT,
    "timeout_default": _maybe(_object({"after_minutes": _maybe(_number), "action": _OPT_TEXT})),
    "context_refs": _maybe(_list(_text)),
    "status": _one_of("open", "deferred", "resolved", "expired"),
    "delivery": _maybe(_list(_object({"channel": _OPT_TEXT, "at": _OPT_TEXT, "error": _OPT_TEXT}))),
    "resolution": _maybe(
        _object(
            {
                key: _OPT_TEXT
                for key in (
                    "chosen_option",
                    "free_text",
                    "parsed_decision",
                    "resolved_at",
                    "by",
                    "via",
                    "outcome",
                    "note",
                    "action",
                )
            }
        )
    ),
    "trigger": _OPT_TEXT,
    "attempted": _maybe(_list(_text)),
    "raised_by": _OPT_TEXT,
    "adopted": _maybe(_bool),
    "raised_block": _maybe(_bool),
    "block_pending": _maybe(_bool),
    "task": _OPT_TEXT,
    "iteration": _maybe(_int),
    "summary": _maybe(_object(values=_text)),
    "needs_human": _maybe(_object()),
    "gate": _maybe(_object()),
    "review": _maybe(
        _object(
            {
                "check_target": _OPT_TEXT,
                "completion_criteria": _maybe(_list(_text)),
                "artifact_url": _maybe(_https),
            }
        )
    ),
    "raised_at": _maybe(_time),
    "not_raised": _maybe(_bool),
    "joined_block": _OPT_TEXT,
    "joined": _maybe(_list(_object({"question": _OPT_TEXT, "request_id": _OPT_TEXT}))),
    "deferrals": _maybe(_list(_object())),
    "timed_out_at": _maybe(_time),
    "applied_at": _maybe(_time),
    "consumed_at": _maybe(_time),
}


def check(data: dict[str, Any], source: str) -> None:
    """Raise ``BadInput`` naming ``source`` and the first field of the wrong shape."""
    for name, rule in FIELDS.items():
        if name in data and (problem := rule(data[name])):
            raise BadInput(
                f"{source}: field {name!r} must be {problem}; fix the file or restore it "
                "from a backup"
            )
