"""Answering a request: parse the reply by the request's kind and record it, exactly once.

- ``question``: :func:`~loopkit.requests.replies.parse_reply` decides; anything unmatched is
  free text.
- ``approval`` (Approve / Reject / Request changes) and ``review`` (Approve / Request changes
  / Defer): :func:`~loopkit.requests.replies.parse_verdict` decides; the reply may carry a
  reason after the choice (``"reject: the migration is not reversible"``), which is kept. A
  reply that picks no option, or approves on a condition, is feedback, recorded as
  ``changes_requested`` with the text as its reason — never as an approval.
- A review's *Defer* is not an answer: the request stays open, ``status: deferred``.

Pure, on one record in memory: the answering service (:mod:`loopkit.answering.service`) is
the one door an answer comes in by — who may answer, the store's lock and the hub's claim
(of many concurrent answers exactly one wins; the others get :class:`RequestConflict`,
exit 4), lifting the block, telling the other surfaces.
"""

from __future__ import annotations

from loopkit import clock
from loopkit.datarecord import replace
from loopkit.errors import RequestConflict
from loopkit.message import clean, fold
from loopkit.requests.answered import Answer as Answer
from loopkit.requests.models import Option, Resolution, Status
from loopkit.requests.replies import parse_reply, parse_verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.requests.record import Request
    from loopkit.requests.replies import Decision

APPROVAL_OPTIONS = (
    Option("Approve", "approved"),
    Option("Reject", "rejected"),
    Option("Request changes", "changes_requested"),
)
REVIEW_OPTIONS = (
    Option("Approve", "approved"),
    Option("Request changes", "changes_requested"),
    Option("Defer", "deferred"),
)
# A gate's question about a shell command or a file tool (SPEC §30): approve this call, or
# this call and every identical one in this workspace from now on (.loopkit/allow.toml).
GATE_OPTIONS = (
    Option("Approve", "approved"),
    Option("Reject", "rejected"),
    Option("Allow always here", "always", aliases=("allow always", "always allow")),
)
QUESTION_OPTIONS = (
    Option("Proceed", "proceed"),
    Option("Skip", "skip"),
    Option("Abort", "abort"),
)


def options_for(kind: str) -> tuple[Option, ...]:
    return {"approval": APPROVAL_OPTIONS, "review": REVIEW_OPTIONS}.get(kind, QUESTION_OPTIONS)


def parse_for(record: Request, reply: str) -> tuple[Decision, dict[str, Any]]:
    """The parsed decision and the extra resolution fields for ``record``'s kind: a
    question's ``note`` (the words after its option); an approval's or review's outcome and
    the words kept as its ``reason`` (and ``note``; feedback: the reason only)."""
    if record.kind not in ("approval", "review"):
        decision = parse_reply(reply, record.options, record.recommendation, p0=record.is_p0)
        extra: dict[str, Any] = {"outcome": "answered"}
        if decision.note:
            extra["note"] = decision.note
        return decision, extra
    decision = parse_verdict(
        reply, record.options, record.kind, record.recommendation, p0=record.is_p0
    )
    extra = {"outcome": decision.chosen_option}
    if decision.note:
        extra["reason"] = decision.note
        if decision.matched_by != "free_text":
            extra["note"] = decision.note
    return decision, extra


def apply_reply(
    record: Request, reply: str, *, by: str, via: str, about: dict[str, Any] | None = None
) -> Answer:
    """Record ``reply`` on ``record`` (in memory): its resolution, or a review's deferral.
    Raises RequestConflict when it is answered already. The one place a reply becomes an
    answer — for this machine's records and, through the fleet, another machine's."""
    reply = clean(reply)
    if not record.is_open:
        raise already_answered(record)
    decision, extra = parse_for(record, reply)
    now = clock.iso_seconds()
    payload = _decision_json(record.request_id, decision, now)
    if record.kind == "review" and decision.chosen_option == "deferred":
        record.status = Status.DEFERRED
        record.deferrals.append({"at": now, "by": by, "via": via, "reason": extra.get("reason")})
        return Answer(record, payload, deferred=True)
    record.status = Status.RESOLVED
    resolution = Resolution(
        request_id=record.request_id,
        chosen_option=decision.chosen_option,
        free_text=decision.free_text,
        parsed_decision=decision.parsed_decision,
        resolved_at=now,
        outcome=extra.get("outcome"),
        reason=extra.get("reason"),
        note=extra.get("note"),
        matched_by=decision.matched_by,
        by=by,
        via=via,
    )
    if about:
        resolution = resolution.with_fields(about)
    record.resolution = replace(resolution, reply=reply[:10_000])
    return Answer(record, payload)


def _decision_json(request_id: str, decision: Decision, at: str) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "chosen_option": decision.chosen_option,
        "free_text": decision.free_text,
        "parsed_decision": decision.parsed_decision,
        "resolved_at": at,
    }


def already_answered(record: Request) -> RequestConflict:
    res = record.resolution or Resolution()
    what = res.parsed_decision or record.status
    who = f" by {res.by}" if res.by else ""
    when = f" at {res.resolved_at}" if res.resolved_at else ""
    if record.status == "dismissed":
        # Closed because nobody was to answer it: not an answer, and final (SPEC §16).
        return RequestConflict(
            f"request {record.request_id!r} was dismissed{who}{when}: it is closed and takes "
            "nothing more; ask again if a human is needed after all"
        )
    if record.status == "expired":
        # A timeout is not an answer, and it is final (SPEC: open → resolved | expired).
        return RequestConflict(
            f"request {record.request_id!r} expired{when} (nobody answered in time; timeout "
            f"action: {res.action or what}); it takes no answer now — lift its block "
            "with `loopkit unblock` (or delete BLOCKED.md) and ask again if need be"
        )
    return RequestConflict(
        f"request {record.request_id!r} is already {record.status} "
        f"({fold(str(what), 80)}{who}{when}); the first answer stands"
    )


def outcome_of(record: Request) -> str:
    """What a script may act on: approved / chosen / rejected / changes_requested /
    aborted / expired / unblocked / dismissed / open. Read from the record, never from a
    list."""
    if record.is_open:
        return "open"
    if record.status in ("expired", "dismissed"):
        return record.status  # nobody answered: nothing was approved or chosen
    res = record.resolution or Resolution()
    if res.outcome == "unblocked":
        return "unblocked"  # the block was lifted without an answer: nothing was chosen
    if record.kind in ("approval", "review"):
        outcome = res.outcome
        if outcome == "always":  # "Allow always here" (or Claude's "Always allow"): approved
            return "approved"
        if outcome in ("approved", "rejected", "changes_requested"):
            return str(outcome)
        return "rejected"  # resolved some other way: never an approval
    if res.chosen_option == "abort":
        return "aborted"
    return "chosen"


def unblocked_by_hand(request_id: str, *, by: str, via: str) -> Resolution:
    """The resolution of a request whose block was lifted without an answer."""
    return Resolution(
        request_id=request_id,
        parsed_decision="unblocked by hand",
        resolved_at=clock.iso_seconds(),
        outcome="unblocked",
        by=by,
        via=via,
    )


def dismiss_record(record: Request, *, by: str, via: str, reason: str | None = None) -> None:
    """Close ``record`` (in memory) as dismissed: nobody will answer it (SPEC §16). Never an
    answer — nothing is chosen, approved or handed to an agent. Raises RequestConflict when
    it is closed already (answered, expired or dismissed: the first ending stands)."""
    if not record.is_open:
        raise already_answered(record)
    why = " ".join(clean(reason or "").split())[:1000]
    record.status = Status.DISMISSED
    record.resolution = Resolution(
        request_id=record.request_id,
        parsed_decision="dismissed",
        resolved_at=clock.iso_seconds(),
        outcome="dismissed",
        reason=why or None,
        by=by,
        via=via,
    )


def timed_out(request_id: str, action: str) -> Resolution:
    """The resolution of a request nobody answered in time (``status: expired``)."""
    return Resolution(
        request_id=request_id,
        parsed_decision=action,
        resolved_at=clock.iso_seconds(),
        by="timeout",
        via="timeout",
        action=action,
    )


def decision_of(record: Request) -> dict[str, Any]:
    """What the next agent run gets (``LOOPKIT_DECISION``, ``last_decision.json``)."""
    res = record.resolution or Resolution()
    return {
        "request_id": record.request_id,
        "chosen_option": res.chosen_option,
        "free_text": res.free_text,
        "parsed_decision": res.parsed_decision,
        "resolved_at": res.resolved_at,
        "note": res.note,
        "by": res.by,
        "via": res.via,
    }


def is_human_decision(record: Request) -> bool:
    """True when a human answered (not a timeout, not a block lifted without an answer)."""
    res = record.resolution or Resolution()
    return (
        record.status == "resolved"
        and res.by not in (None, "timeout")
        and res.outcome != "unblocked"
    )
