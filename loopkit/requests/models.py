"""The typed values inside a request record: its place in the block lifecycle, an option, a
delivery attempt, a resolution.

Each class has an attribute for every key loopkit writes and reads them from (and writes
them to) the record's JSON under the same keys (SPEC sections 3, 4 and 9). Keys it does not
know are kept in ``extra`` and written back unchanged, so a rewrite loses nothing. The
shapes are checked once, at load (:mod:`~loopkit.requests.shape`), before ``from_dict``
trusts them.
"""

from __future__ import annotations

import functools

from loopkit.datarecord import field, fields, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

# A request's place in the block lifecycle (SPEC section 15):
# - none: it has no block — asked without --block (a later `ask --key … --block` raises it);
# - pending: saved, its BLOCKED.md not written yet (a crash here is finished by the repair);
# - raised: it has a BLOCKED.md of its own, loopkit's, naming it: its answer is for the loop;
# - joined: a block stood when it was asked; it waits to be raised when that block goes
#   (``Request.joined_to`` names that block's request, None for a block naming none);
# - adopted: an agent's hand-written BLOCKED.md, left as it was written (a block of its own).
if TYPE_CHECKING:
    Block = Literal["none", "pending", "raised", "joined", "adopted"]
BLOCKS: tuple[Block, ...] = ("none", "pending", "raised", "joined", "adopted")
OWN_BLOCKS: tuple[Block, ...] = ("pending", "raised", "adopted")  # a BLOCKED.md of its own
# SPEC section 4's decision JSON; a resolution always carries these keys.
DECISION_KEYS = ("request_id", "chosen_option", "free_text", "parsed_decision", "resolved_at")


@functools.cache
def _known(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls)) - {"extra"}


def _split(cls: type, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``data``'s keys ``cls`` has attributes for, and the rest (its ``extra``)."""
    known = _known(cls)
    return (
        {k: v for k, v in data.items() if k in known},
        {k: v for k, v in data.items() if k not in known},
    )


@record(frozen=True, slots=True)
class Option:
    """One answer offered: what the human sees (``label``), what a decision carries
    (``value``, stable whatever letter the option gets) and other words for it (``aliases``:
    ``stop`` for *Abort the loop*; SPEC section 16), written only when there are some."""

    label: str
    value: str | None = None
    consequence: str | None = None  # escalate's choices: what picking it means
    aliases: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"label": self.label, "value": self.value}
        if self.consequence is not None:
            data["consequence"] = self.consequence
        if self.aliases:
            data["aliases"] = list(self.aliases)
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Option:
        values, extra = _split(cls, data)
        values.setdefault("label", "")
        values["aliases"] = tuple(values.get("aliases") or ())
        return cls(**values, extra=extra)


@record(frozen=True, slots=True)
class DeliveryAttempt:
    """One try to tell the human (SPEC section 3); ``ok`` and ``status`` None: in flight."""

    channel: str | None = None
    at: str | None = None
    ok: bool | None = None
    status: int | str | None = None  # HTTP status, exit code, "timeout", "error", "interrupted"
    error: str | None = None
    message_id: int | str | None = None
    repeat: bool = False  # sent once more: an earlier attempt's outcome is unknown (a crash)
    reminder: bool = False  # "[loopkit] still blocked …", not the message itself
    within_send: bool = False  # a try retried within one send: not a send of its own
    hard: bool = False  # retrying the same channel will not mend it
    extra: dict[str, Any] = field(default_factory=dict)

    _FLAGS = ("repeat", "reminder", "within_send", "hard")  # written only when true

    @property
    def in_flight(self) -> bool:
        return self.ok is None and self.status is None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "channel": self.channel,
            "at": self.at,
            "ok": self.ok,
            "status": self.status,
            "error": self.error,
            "message_id": self.message_id,
        }
        for flag in self._FLAGS:
            if getattr(self, flag):
                data[flag] = True
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeliveryAttempt:
        values, extra = _split(cls, data)
        for flag in cls._FLAGS:
            values[flag] = bool(values.get(flag))
        return cls(**values, extra=extra)


@record(frozen=True, slots=True)
class Resolution:
    """How a request ended (SPEC section 4's decision block, and who gave it).

    The five decision keys are always written; the others only when set."""

    request_id: str | None = None
    chosen_option: str | None = None
    free_text: str | None = None
    parsed_decision: str | None = None
    resolved_at: str | None = None
    # answered | approved | rejected | changes_requested | unblocked | dismissed (none for a
    # timeout)
    outcome: str | None = None
    reason: str | None = None  # an approval's or review's reason after the choice
    note: str | None = None  # the words after an option's letter ("B, this is obsolete")
    matched_by: str | None = None  # how the reply was read (replies.MatchedBy): told back
    action: str | None = None  # a timeout's action (status: expired)
    by: str | None = None  # who: a user name, "human", "timeout"
    via: str | None = None  # cli, telegram, inbox, blocked-file-removed, timeout
    by_id: int | str | None = None  # the channel's own id of who answered (Telegram's user id)
    by_name: str | None = None  # the channel's own name of who answered
    reply: str | None = None  # the reply as given (at most 10,000 characters)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name in DECISION_KEYS or value is not None:
                data[f.name] = value
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Resolution:
        values, extra = _split(cls, data)
        return cls(**values, extra=extra)

    def with_fields(self, more: dict[str, Any]) -> Resolution:
        """This resolution with ``more`` keys set (a channel's own terms for who answered)."""
        return Resolution.from_dict({**self.to_dict(), **more})
