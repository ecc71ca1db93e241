"""A request record (``requests/<id>.json``): what a human is asked, and how it ended.

A record is versioned (``schema_version``); records written by an earlier version are
upgraded on read (:mod:`~loopkit.requests.migrate`) and written back in the current shape.
Fields this code does not know are kept in ``extra`` and written back unchanged.
"""

from __future__ import annotations

import os
import re

from loopkit import clock
from loopkit.datarecord import field, fields, record
from loopkit.errors import BadInput
from loopkit.message import Message
from loopkit.requests import shape
from loopkit.requests.migrate import migrate_v1
from loopkit.requests.models import OWN_BLOCKS, DeliveryAttempt, Option, Resolution

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from loopkit.requests.models import Block

SCHEMA_VERSION = 2
# \Z: "x\n" is not "x". Compiled on first use, by re's cache (not at import: SPEC §20).
ID_PATTERN = r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z"
KINDS = ("question", "approval", "review")
STATUSES = ("open", "deferred", "resolved", "expired", "dismissed")


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


def is_id(text: str) -> bool:
    """Whether ``text`` is a request id's shape (a file name may be anything)."""
    return re.match(ID_PATTERN, text) is not None


def validate_id(request_id: str) -> str:
    if not re.match(ID_PATTERN, request_id):
        raise BadInput(
            f"request id {request_id!r} is not allowed: use 1-64 letters, digits, '_' or '-', "
            "starting with a letter or digit"
        )
    return request_id


def new_id() -> str:
    return os.urandom(6).hex()  # secrets.token_hex, without its imports (SPEC §20)


if TYPE_CHECKING:
    Kind = Literal["question", "approval", "review"]
    Status = Literal["open", "deferred", "resolved", "expired", "dismissed"]

# Fields loopkit owns beyond SPEC section 4's: written only when set, so a record carries
# what happened to it and nothing else.
_WHEN_SET = (
    "raised_by",
    "joined_to",
    "task",
    "iteration",
    "summary",
    "needs_human",
    "gate",
    "raised_at",
    "joined",
    "deferrals",
    "timed_out_at",
    "applied_at",
    "consumed_at",
    "review",
)
_LISTS = ("options", "delivery", "context_refs", "attempted", "joined", "deferrals")
_DICTS = ("timeout_default", "summary", "needs_human", "gate", "review")


@record(slots=True)
class Request:
    """One question to a human. SPEC section 4's fields first, then loopkit's own."""

    request_id: str
    prompt: str
    created_at: str = field(default_factory=clock.iso_seconds)
    updated_at: str = field(default_factory=clock.iso_millis)
    request_key: str | None = None
    kind: Kind = "question"
    situation: str = ""
    policy: str = ""
    options: list[Option] = field(default_factory=list)
    recommendation: str | None = None
    timeout_default: dict[str, Any] = field(
        default_factory=lambda: {"after_minutes": 30, "action": "abort"}
    )
    context_refs: list[str] = field(default_factory=list)
    status: Status = "open"
    delivery: list[DeliveryAttempt] = field(default_factory=list)
    resolution: Resolution | None = None
    trigger: str | None = None  # what raised it: agent, verify-failures, missing-env, ...
    attempted: list[str] = field(default_factory=list)
    # Who raised it: "supervisor" for the loop's own blocks (its choices are acted on).
    raised_by: str | None = None
    block: Block = "none"  # its place in the block lifecycle (see models.Block)
    # block "joined": the request id of the open block it joined (None: that block names no
    # request — a hand-written BLOCKED.md).
    joined_to: str | None = None
    task: str | None = None  # the supervisor's task and iteration when it raised the block
    iteration: int | None = None
    summary: dict[str, str] | None = None  # short lines 3 and 4 of the message
    needs_human: dict[str, Any] | None = None  # ask's policy verdict
    gate: dict[str, Any] | None = None  # gate's binding: masked argv, cwd, sha256 of the real
    raised_at: str | None = None  # when it was asked, if later than created (it joined first)
    joined: list[dict[str, Any]] = field(default_factory=list)  # questions that joined this
    deferrals: list[dict[str, Any]] = field(default_factory=list)  # a review's Defer answers
    timed_out_at: str | None = None  # a queue timeout passed: it waits with no deadline
    applied_at: str | None = None  # the supervisor acted on its ending: never again
    consumed_at: str | None = None  # a gate's approval was used: once
    # A review's check target, completion criteria and artifact link (https).
    review: dict[str, Any] | None = None
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)  # fields this code does not know

    @property
    def is_open(self) -> bool:
        return self.status in ("open", "deferred")

    @property
    def has_own_block(self) -> bool:
        """It has (or is about to write) a BLOCKED.md of its own: its answer is for the loop."""
        return self.block in OWN_BLOCKS

    @property
    def asked_at(self) -> str:
        """When the human was asked: a request that first joined another block is asked later."""
        return self.raised_at or self.created_at

    def message(self, repo: str, link: str | None = None) -> Message:
        """The five lines for this request, asked in ``repo``; a short ``summary`` (when
        given) feeds lines 3 and 4. ``link``: the request's page in the web inbox."""
        summary = self.summary or {}
        attempted = summary.get("attempted")
        return Message(
            request_id=self.request_id,
            repo=repo,
            at=self.asked_at,
            question=self.prompt,
            context=str(summary.get("context") or self.situation),
            attempted=(str(attempted),) if attempted else tuple(self.attempted),
            choices=tuple(o.label for o in self.options),
            link=link,
        )

    def to_dict(self) -> dict[str, Any]:
        """Known fields in SPEC order (loopkit's own only when set), then unknown ones unchanged."""
        names = [f.name for f in fields(self) if f.name != "extra"]
        names.sort(key=lambda n: _ORDER.index(n) if n in _ORDER else len(_ORDER))
        data: dict[str, Any] = {}
        for name in names:
            value = getattr(self, name)
            if name in _WHEN_SET and value in (None, False, [], {}):
                continue
            data[name] = value
        data["options"] = [option.to_dict() for option in self.options]
        data["delivery"] = [attempt.to_dict() for attempt in self.delivery]
        data["resolution"] = None if self.resolution is None else self.resolution.to_dict()
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "record") -> Request:
        known = {f.name for f in fields(cls)} - {"extra"}
        if not isinstance(data.get("request_id"), str) or not isinstance(data.get("prompt"), str):
            raise BadInput(f"{source}: missing request_id or prompt; restore it from a backup")
        shape.check(data, source, shape.VERSION)
        if (data.get("schema_version") or 0) < 2:
            shape.check(data, source, shape.V1_LIFECYCLE)
            data = migrate_v1(data)
        shape.check(data, source)
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        values.setdefault("updated_at", data.get("created_at") or clock.iso_millis())
        values.setdefault("created_at", values["updated_at"])
        values["schema_version"] = max(int(data.get("schema_version") or 0), SCHEMA_VERSION)
        for names, kind, what in ((_LISTS, list, "a list"), (_DICTS, dict, "an object")):
            for name in names:
                if values.get(name) is None:
                    values.pop(name, None)
                elif not isinstance(values[name], kind):
                    raise BadInput(f"{source}: {name!r} must be {what}; fix or restore the file")
        if "options" in values:
            values["options"] = [Option.from_dict(o) for o in values["options"]]
        if "delivery" in values:
            values["delivery"] = [DeliveryAttempt.from_dict(d) for d in values["delivery"]]
        if isinstance(values.get("resolution"), dict):
            values["resolution"] = Resolution.from_dict(values["resolution"])
        if values.get("status") not in STATUSES:
            raise BadInput(f"{source}: unknown status {values.get('status')!r}; fix the file")
        record = cls(**values)
        record.extra = {k: v for k, v in data.items() if k not in known}
        return record
