"""The shape a request record must have before any code touches it.

A record is a file anyone can edit, restore from a backup or break. Every field loopkit
reads is checked here, once, at load: a wrong shape is a one-line error naming the file and
the field (``BadInput``, exit 65), never an exception deep in some command. Fields loopkit
does not know are not looked at (they are kept and written back unchanged).
"""

from __future__ import annotations

import math

from loopkit import clock
from loopkit.errors import BadInput
from loopkit.requests.models import BLOCKS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

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
_OPT_FLAG = _maybe(_bool)


def _whole(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**53
    return None if ok else "a whole number"


def _either(*checks: Check) -> Check:
    """Passes when one of ``checks`` does; the problem names what each wanted."""

    def either(value: Any) -> str | None:
        problems = [problem for check in checks if (problem := check(value))]
        return None if len(problems) < len(checks) else " or ".join(problems)

    return either


_OPT_ID = _maybe(_either(_whole, _text))

OPTION: dict[str, Check] = {
    "label": _text,
    "value": _OPT_TEXT,
    "consequence": _OPT_TEXT,
    "aliases": _maybe(_list(_text)),
}
DELIVERY_ATTEMPT: dict[str, Check] = {
    "channel": _OPT_TEXT,
    "at": _OPT_TEXT,
    "ok": _OPT_FLAG,
    "status": _OPT_ID,
    "error": _OPT_TEXT,
    "message_id": _OPT_ID,
    "repeat": _OPT_FLAG,
    "reminder": _OPT_FLAG,
    "within_send": _OPT_FLAG,
    "hard": _OPT_FLAG,
}
_RESOLUTION_TEXTS = (
    "request_id",
    "chosen_option",
    "free_text",
    "parsed_decision",
    "resolved_at",
    "outcome",
    "reason",
    "note",
    "matched_by",
    "action",
    "by",
    "via",
    "by_name",
    "reply",
)
RESOLUTION: dict[str, Check] = {**dict.fromkeys(_RESOLUTION_TEXTS, _OPT_TEXT), "by_id": _OPT_ID}

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
    "options": _maybe(_list(_object(OPTION))),
    "recommendation": _OPT_TEXT,
    "timeout_default": _maybe(_object({"after_minutes": _maybe(_number), "action": _OPT_TEXT})),
    "context_refs": _maybe(_list(_text)),
    "status": _one_of("open", "deferred", "resolved", "expired", "dismissed"),
    "delivery": _maybe(_list(_object(DELIVERY_ATTEMPT))),
    "resolution": _maybe(_object(RESOLUTION)),
    "trigger": _OPT_TEXT,
    "attempted": _maybe(_list(_text)),
    "raised_by": _OPT_TEXT,
    "block": _one_of(*BLOCKS),
    "joined_to": _OPT_TEXT,
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
    "joined": _maybe(_list(_object({"question": _OPT_TEXT, "request_id": _OPT_TEXT}))),
    "deferrals": _maybe(_list(_object())),
    "timed_out_at": _maybe(_time),
    "applied_at": _maybe(_time),
    "consumed_at": _maybe(_time),
}
VERSION: dict[str, Check] = {"schema_version": FIELDS["schema_version"]}
# Version 1's lifecycle fields, checked before they are migrated (loopkit.requests.migrate).
V1_LIFECYCLE: dict[str, Check] = {
    "adopted": _OPT_FLAG,
    "raised_block": _OPT_FLAG,
    "block_pending": _OPT_FLAG,
    "not_raised": _OPT_FLAG,
    "joined_block": _OPT_TEXT,
}


def check(data: dict[str, Any], source: str, rules: dict[str, Check] | None = None) -> None:
    """Raise ``BadInput`` naming ``source`` and the first field of the wrong shape: of
    ``rules``' fields, by default every field of a current record."""
    for name, rule in (FIELDS if rules is None else rules).items():
        if name in data and (problem := rule(data[name])):
            raise BadInput(
                f"{source}: field {name!r} must be {problem}; fix the file or restore it "
                "from a backup"
            )
