"""A request record (``requests/<id>.json``): what a human is asked, and how it ended.

A record is versioned (``schema_version``); records written before versioning are upgraded
on read. Fields this code does not know are kept in ``extra`` and written back unchanged.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field, fields
from typing import Any

from loopkit import clock
from loopkit.errors import BadInput

SCHEMA_VERSION = 1
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
KINDS = ("question", "approval", "review")
STATUSES = ("open", "deferred", "resolved", "expired")


_ORDER = (
    "schema_version",
    "request_id",
    "request_key",
    "created_at",
    "updated_at",
    "kind",
    "situation",
    "policy",
    "prompt",
    "options",
    "recommendation",
    "timeout_default",
    "context_refs",
    "status",
    "delivery",
    "resolution",
)


def validate_id(request_id: str) -> str:
    if not ID_RE.match(request_id):
        raise BadInput(
            f"request id {request_id!r} is not allowed: use 1-64 letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return request_id


def new_id() -> str:
    return secrets.token_hex(6)


@dataclass(slots=True)
class Request:
    request_id: str
    prompt: str
    created_at: str = field(default_factory=clock.iso_seconds)
    updated_at: str = field(default_factory=clock.iso_millis)
    request_key: str | None = None
    kind: str = "question"
    situation: str = ""
    policy: str = ""
    options: list[dict[str, Any]] = field(default_factory=list)
    recommendation: str | None = None
    timeout_default: dict[str, Any] = field(
        default_factory=lambda: {"after_minutes": 30, "action": "abort"}
    )
    context_refs: list[str] = field(default_factory=list)
    status: str = "open"
    delivery: list[dict[str, Any]] = field(default_factory=list)
    resolution: dict[str, Any] | None = None
    trigger: str | None = None  # what raised it: agent, verify-failures, missing-env, ...
    attempted: list[str] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        return self.status in ("open", "deferred")

    def to_dict(self) -> dict[str, Any]:
        """Known fields in SPEC order, then the fields this code does not know, unchanged."""
        names = [f.name for f in fields(self) if f.name != "extra"]
        names.sort(key=lambda n: _ORDER.index(n) if n in _ORDER else len(_ORDER))
        data = {name: getattr(self, name) for name in names}
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "record") -> Request:
        known = {f.name for f in fields(cls)} - {"extra"}
        if not isinstance(data.get("request_id"), str) or not isinstance(data.get("prompt"), str):
            raise BadInput(f"{source}: missing request_id or prompt; restore it from a backup")
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        values.setdefault("updated_at", data.get("created_at") or clock.iso_millis())
        values.setdefault("created_at", values["updated_at"])
        values["schema_version"] = max(int(data.get("schema_version") or 0), SCHEMA_VERSION)
        for name, kind in (
            ("options", list),
            ("delivery", list),
            ("context_refs", list),
            ("attempted", list),
        ):
            if values.get(name) is None:
                values.pop(name, None)
            elif not isinstance(values[name], kind):
                raise BadInput(f"{source}: {name!r} must be a list; fix or restore the file")
        if values.get("timeout_default") is None:
            values.pop("timeout_default", None)
        if values.get("status") not in STATUSES:
            raise BadInput(f"{source}: unknown status {values.get('status')!r}; fix the file")
        record = cls(**values)
        record.extra = {k: v for k, v in data.items() if k not in known}
        return record
