r"""The typed values inside a request record: its place in the block lifecycle, an option, a
delivery attempt, a resolution.

Each class has an attribute for every key loopkit writes and reads them from (and writes
them to) the record's JSON under the same keys (SPEC sections 3, 4 and 9). Keys it does not
know are kept in ``extra`` and written back unchanged, so a rewrite loses nothing. Each
field declares its shape — its check, whether it is written only when set — in its
metadata (:func:`loopkit.requests.shape.of`): checked once, at load, before ``from_dict``
trusts it. The closed sets — a request's kind, status and block — are ``StrEnum``\ s.
"""

from __future__ import annotations

from enum import StrEnum

from loopkit.datarecord import field, record
from loopkit.requests import shape
from loopkit.requests.shape import OPT_FLAG, OPT_ID, OPT_TEXT, list_of, maybe, of, text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Kind(StrEnum):
    """What is asked: a question (pick an option or say something), an approval (approve,
    reject, ask for changes), a review (approve, ask for changes, defer)."""

    QUESTION = "question"
    APPROVAL = "approval"
    REVIEW = "review"


class Status(StrEnum):
    """How far a request is: open (or deferred — a review put off: still open), then one
    ending: resolved (answered), expired (nobody answered in time), dismissed (nobody will)."""

    OPEN = "open"
    DEFERRED = "deferred"
    RESOLVED = "resolved"
    EXPIRED = "expired"
    DISMISSED = "dismissed"


class Block(StrEnum):
    """A request's place in the block lifecycle (SPEC section 15)."""

    NONE = "none"  # no block: asked without --block (a later `ask --key … --block` raises it)
    PENDING = "pending"  # saved, its BLOCKED.md not written yet (the repair finishes a crash)
    RAISED = "raised"  # a BLOCKED.md of its own, loopkit's, naming it: its answer is the loop's
    # a block stood when it was asked; it is raised when that block goes (``joined_to`` names
    # that block's request, None for a block naming none)
    JOINED = "joined"
    ADOPTED = "adopted"  # an agent's hand-written BLOCKED.md, left as written (its own block)


OPEN_STATUSES = (Status.OPEN, Status.DEFERRED)
OWN_BLOCKS = (Block.PENDING, Block.RAISED, Block.ADOPTED)  # a BLOCKED.md of its own
# SPEC section 4's decision JSON; a resolution always carries these keys.
DECISION_KEYS = ("request_id", "chosen_option", "free_text", "parsed_decision", "resolved_at")


@record(frozen=True, slots=True)
class Option:
    """One answer offered: what the human sees (``label``), what a decision carries
    (``value``, stable whatever letter the option gets) and other words for it (``aliases``:
    ``stop`` for *Abort the loop*; SPEC section 16), written only when there are some."""

    label: str = field(metadata=of(text))
    value: str | None = field(default=None, metadata=of(OPT_TEXT))
    # escalate's choices: what picking it means
    consequence: str | None = field(default=None, metadata=of(OPT_TEXT, when_set=True))
    aliases: tuple[str, ...] = field(
        default_factory=tuple, metadata=of(maybe(list_of(text)), when_set=True)
    )
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return shape.written(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Option:
        values = shape.read(cls, data, "option")
        values.setdefault("label", "")
        return cls(**values)


@record(frozen=True, slots=True)
class DeliveryAttempt:
    """One try to tell the human (SPEC section 3); ``ok`` and ``status`` None: in flight."""

    channel: str | None = field(default=None, metadata=of(OPT_TEXT))
    at: str | None = field(default=None, metadata=of(OPT_TEXT))
    ok: bool | None = field(default=None, metadata=of(OPT_FLAG))
    # HTTP status, exit code, "timeout", "error", "interrupted"
    status: int | str | None = field(default=None, metadata=of(OPT_ID))
    error: str | None = field(default=None, metadata=of(OPT_TEXT))
    message_id: int | str | None = field(default=None, metadata=of(OPT_ID))
    # sent once more: an earlier attempt's outcome is unknown (a crash)
    repeat: bool = field(default=False, metadata=of(OPT_FLAG, when_set=True))
    # "[loopkit] still blocked …", not the message itself
    reminder: bool = field(default=False, metadata=of(OPT_FLAG, when_set=True))
    # a try retried within one send: not a send of its own
    within_send: bool = field(default=False, metadata=of(OPT_FLAG, when_set=True))
    hard: bool = field(default=False, metadata=of(OPT_FLAG, when_set=True))  # no retry mends it
    # who of [[escalation.people]] it was for (SPEC §29); None: the channel's own address
    person: str | None = field(default=None, metadata=of(OPT_TEXT, when_set=True))
    # not the block's message but a follow-up about it: "outcome" (how it ended, told to
    # whoever was asked), "acknowledge" (PagerDuty: someone opened it) — never a send of the
    # ladder's
    followup: str | None = field(default=None, metadata=of(OPT_TEXT, when_set=True))
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def in_flight(self) -> bool:
        return self.ok is None and self.status is None

    @property
    def is_send(self) -> bool:
        """One of the ladder's sends (the message, a repeat, a reminder), not a follow-up."""
        return self.followup is None

    def to_dict(self) -> dict[str, Any]:
        return shape.written(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeliveryAttempt:
        values = shape.read(cls, data, "delivery attempt")
        for flag in ("repeat", "reminder", "within_send", "hard"):
            values[flag] = bool(values.get(flag))
        return cls(**values)


def _said(**more: Any) -> Any:
    """A resolution's field beyond the decision's five: text, written only when set."""
    return field(default=None, metadata=of(OPT_TEXT, when_set=True, **more))


@record(frozen=True, slots=True)
class Resolution:
    """How a request ended (SPEC section 4's decision block, and who gave it).

    The five decision keys are always written; the others only when set."""

    request_id: str | None = field(default=None, metadata=of(OPT_TEXT))
    chosen_option: str | None = field(default=None, metadata=of(OPT_TEXT))
    free_text: str | None = field(default=None, metadata=of(OPT_TEXT))
    parsed_decision: str | None = field(default=None, metadata=of(OPT_TEXT))
    resolved_at: str | None = field(default=None, metadata=of(OPT_TEXT))
    # answered | approved | rejected | changes_requested | unblocked | dismissed (none for a
    # timeout)
    outcome: str | None = _said()
    reason: str | None = _said()  # an approval's or review's reason after the choice
    note: str | None = _said()  # the words after an option's letter ("B, this is obsolete")
    matched_by: str | None = _said()  # how the reply was read (replies.MatchedBy): told back
    action: str | None = _said()  # a timeout's action (status: expired)
    by: str | None = _said()  # who: a user name, "human", "timeout"
    via: str | None = _said()  # cli, telegram, inbox, blocked-file-removed, timeout
    # the channel's own id of who answered (Telegram's user id)
    by_id: int | str | None = field(default=None, metadata=of(OPT_ID, when_set=True))
    by_name: str | None = _said()  # the channel's own name of who answered
    reply: str | None = _said()  # the reply as given (at most 10,000 characters)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return shape.written(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Resolution:
        return cls(**shape.read(cls, data, "resolution"))

    def with_fields(self, more: dict[str, Any]) -> Resolution:
        """This resolution with ``more`` keys set (a channel's own terms for who answered)."""
        return Resolution.from_dict({**self.to_dict(), **more})
