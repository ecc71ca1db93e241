"""A request record (``requests/<id>.json``): what a human is asked, and how it ended.

A record is versioned (``schema_version``); records written by an earlier version are
upgraded on read (:mod:`~loopkit.requests.migrate`) and written back in the current shape.
Fields this code does not know are kept in ``extra`` and written back unchanged.
"""

from __future__ import annotations

import os
import re

from loopkit import clock
from loopkit.datarecord import field, record
from loopkit.errors import BadInput
from loopkit.message import Message
from loopkit.requests import shape
from loopkit.requests.migrate import migrate_v1
from loopkit.requests.models import (
    OPEN_STATUSES,
    OWN_BLOCKS,
    Block,
    DeliveryAttempt,
    Kind,
    Option,
    Resolution,
    Status,
)
from loopkit.requests.shape import (
    OPT_TEXT,
    as_object,
    https,
    list_of,
    maybe,
    number,
    obj,
    of,
    one_of,
    text,
    time,
    whole_number,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_VERSION = 2
# \Z: "x\n" is not "x". Compiled on first use, by re's cache (not at import: SPEC §20).
ID_PATTERN = r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z"
KINDS = tuple(k.value for k in Kind)  # the values, as a command line gives them
STATUSES = tuple(s.value for s in Status)


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


def _spec(order: int, check: shape.Check, **default: Any) -> Any:
    """One of SPEC section 4's fields: its place in the record's order, its shape."""
    return field(**default, metadata=of(check, order=order))


def _own(check: shape.Check, **default: Any) -> Any:
    """A field loopkit owns beyond SPEC section 4's: written only when set, so a record
    carries what happened to it and nothing else."""
    return field(**default, metadata=of(check, when_set=True))


_TIMEOUT = obj({"after_minutes": maybe(number), "action": OPT_TEXT})
_REVIEW = obj({"check_target": OPT_TEXT, "completion_criteria": maybe(list_of(text)),
               "artifact_url": maybe(https)})  # fmt: skip
_JOINED = obj({"question": OPT_TEXT, "request_id": OPT_TEXT})


@record(slots=True)
class Request:
    """One question to a human. SPEC section 4's fields first, then loopkit's own."""

    request_id: str = _spec(1, text)
    prompt: str = _spec(8, text)
    created_at: str = _spec(3, time, default_factory=clock.iso_seconds)
    updated_at: str = _spec(4, time, default_factory=clock.iso_millis)
    request_key: str | None = _spec(2, OPT_TEXT, default=None)
    kind: Kind = _spec(5, one_of(Kind), default=Kind.QUESTION)
    situation: str = _spec(6, text, default="")
    policy: str = _spec(7, text, default="")
    options: list[Option] = field(
        default_factory=list,
        metadata=of(maybe(list_of(as_object(Option))), order=9, items=Option),
    )
    recommendation: str | None = _spec(10, OPT_TEXT, default=None)
    timeout_default: dict[str, Any] = _spec(
        11, maybe(_TIMEOUT), default_factory=lambda: {"after_minutes": 30, "action": "abort"}
    )
    context_refs: list[str] = _spec(12, maybe(list_of(text)), default_factory=list)
    status: Status = _spec(13, one_of(Status), default=Status.OPEN)
    delivery: list[DeliveryAttempt] = field(
        default_factory=list,
        metadata=of(maybe(list_of(as_object(DeliveryAttempt))), order=14, items=DeliveryAttempt),
    )
    resolution: Resolution | None = field(
        default=None, metadata=of(maybe(as_object(Resolution)), order=15, one=Resolution)
    )
    # what raised it: agent, verify-failures, missing-env, ...
    trigger: str | None = field(default=None, metadata=of(OPT_TEXT))
    attempted: list[str] = field(default_factory=list, metadata=of(maybe(list_of(text))))
    # Who raised it: "supervisor" for the loop's own blocks (its choices are acted on).
    raised_by: str | None = _own(OPT_TEXT, default=None)
    # its place in the block lifecycle (models.Block)
    block: Block = field(default=Block.NONE, metadata=of(one_of(Block)))
    # block "joined": the request id of the open block it joined (None: that block names no
    # request — a hand-written BLOCKED.md).
    joined_to: str | None = _own(OPT_TEXT, default=None)
    # the supervisor's task and iteration when it raised the block
    task: str | None = _own(OPT_TEXT, default=None)
    iteration: int | None = _own(maybe(whole_number), default=None)
    summary: dict[str, str] | None = _own(maybe(obj(values=text)), default=None)  # lines 3, 4
    needs_human: dict[str, Any] | None = _own(maybe(obj()), default=None)  # ask's verdict
    # gate's binding: masked argv, cwd, sha256 of the real
    gate: dict[str, Any] | None = _own(maybe(obj()), default=None)
    # when it was asked, if later than created (it joined first)
    raised_at: str | None = _own(maybe(time), default=None)
    # questions that joined this
    joined: list[dict[str, Any]] = _own(maybe(list_of(_JOINED)), default_factory=list)
    # a review's Defer answers
    deferrals: list[dict[str, Any]] = _own(maybe(list_of(obj())), default_factory=list)
    # a queue timeout passed: it waits with no deadline
    timed_out_at: str | None = _own(maybe(time), default=None)
    applied_at: str | None = _own(maybe(time), default=None)  # the loop acted on its ending
    consumed_at: str | None = _own(maybe(time), default=None)  # a gate's approval was used
    # A review's check target, completion criteria and artifact link (https).
    review: dict[str, Any] | None = _own(maybe(_REVIEW), default=None)
    schema_version: int = _spec(0, maybe(whole_number), default=SCHEMA_VERSION)
    extra: dict[str, Any] = field(default_factory=dict)  # fields this code does not know

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def is_p0(self) -> bool:
        """Whether what its answer lets happen cannot be undone (SPEC §28: P0): an action bound
        by a gate (``loopkit gate``, a hook's gated call, Claude Code's permission dialog) or
        an ask found P0 (``--irreversible``, data loss, security, legal, a one-way door). Only
        the option alone chooses it (:mod:`~loopkit.requests.replies`)."""
        return self.gate is not None or bool((self.needs_human or {}).get("p0"))

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
        """Known fields in SPEC order (loopkit's own only when set), then unknown ones
        unchanged."""
        return shape.written(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "record") -> Request:
        if not isinstance(data.get("request_id"), str) or not isinstance(data.get("prompt"), str):
            raise BadInput(f"{source}: missing request_id or prompt; restore it from a backup")
        shape.check(data, source, shape.VERSION)
        if (data.get("schema_version") or 0) < 2:
            shape.check(data, source, shape.V1_LIFECYCLE)
            data = migrate_v1(data)
        shape.check(data, source, RULES)
        values = shape.read(cls, data, source)
        values.setdefault("updated_at", data.get("created_at") or clock.iso_millis())
        values.setdefault("created_at", values["updated_at"])
        values["schema_version"] = max(int(data.get("schema_version") or 0), SCHEMA_VERSION)
        values["kind"], values["status"] = (
            Kind(values.get("kind", "question")),
            Status(values.get("status", "open")),
        )
        values["block"] = Block(values.get("block", "none"))
        return cls(**values)


RULES = shape.rules(Request)  # every field's shape, from its declaration
