"""``loopkit ask``: compose one mobile-first question, or decide that none is needed.

The order is fixed: 1. decide ``needs_human`` (nothing is written when no human is needed);
2. apply the rubric (refused with exit 65, the rule named, nothing written); 3. with a
``request_key``, return the open request that already has it (no second file, no second
message); 4. persist the record — and with ``block``, write BLOCKED.md and send, as
``escalate`` does. Approvals and reviews always need a human: asking for one says so.
"""

from __future__ import annotations

import os

from loopkit.datarecord import record
from loopkit.errors import BadInput, UsageError
from loopkit.escalation import policy as policy_mod
from loopkit.escalation import rubric
from loopkit.escalation.blockfile import shown, slug
from loopkit.escalation.escalator import Escalator
from loopkit.log import get_logger
from loopkit.message import clean, fold
from loopkit.redact import mask_shapes
from loopkit.requests.answer import options_for
from loopkit.requests.models import Block, Kind, Option
from loopkit.requests.record import KINDS, Request, new_id, validate_id
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.channels import Outcome
    from loopkit.config import Config
    from loopkit.config.values import PolicyAnswer

log = get_logger("loopkit.ask")

MAX_MINUTES = 366 * 24 * 60  # a timeout of a year at most, as every duration (config)


@record(frozen=True, slots=True)
class Question:
    situation: str
    policy: str = ""
    prompt: str | None = None
    options: tuple[str, ...] = ()  # "Label" or "Label=value"
    recommend: str | None = None
    category: str | None = None
    confidence: float | None = None
    irreversible: bool = False
    timeout_minutes: float | None = None
    on_timeout: str | None = None
    attach: tuple[str, ...] = ()
    request_id: str | None = None
    key: str | None = None
    kind: Kind = Kind.QUESTION
    block: bool = False
    # A review's check target, completion criteria and artifact (an https URL).
    check_target: str | None = None
    criteria: tuple[str, ...] = ()
    artifact_url: str | None = None


@record(frozen=True, slots=True)
class Asked:
    needs_human: bool
    reason: str
    note: str | None = None
    record: Request | None = None
    existing: bool = False  # an open request with the same key was returned
    joined: str | None = None  # --block while blocked: the open block this joined
    outcome: Outcome | None = None  # --block: the delivery outcome
    # [[policy.answers]] answers it (its number, the entry): written without a block, for the
    # caller to answer through the answering service (SPEC §30)
    policy: tuple[int, PolicyAnswer] | None = None


def _review(question: Question) -> dict[str, Any] | None:
    """What a review's page shows beside its question (SPEC section 11), or None."""
    url = (question.artifact_url or "").strip()
    if url and not url.startswith("https://"):
        raise BadInput(f"artifact URL {url!r} is not https://; give an https link to the artifact")
    review: dict[str, Any] = {
        "check_target": clean(question.check_target or "").strip() or None,
        "completion_criteria": [clean(c).strip() for c in question.criteria if c.strip()],
        "artifact_url": clean(url) or None,
    }
    if question.kind != "review" and any(review.values()):
        raise BadInput("--check-target, --criterion and --artifact-url are for --kind review")
    return {k: v for k, v in review.items() if v} or None


def _options(question: Question) -> list[Option]:
    if question.kind != "question":
        if question.options:
            fixed = " / ".join(o.label for o in options_for(question.kind))
            raise UsageError(
                f"--option does not go with --kind {question.kind}: its options are {fixed}"
            )
        return list(options_for(question.kind))
    if not question.options:
        return list(options_for("question"))
    options = []
    for text in question.options:
        label, sep, value = clean(text).partition("=")
        label, value = label.strip(), value.strip()
        if sep and not value:
            raise BadInput(f'option {text!r} has an empty value; write it as "Label=value"')
        options.append(Option(label, value or slug(label)))
    return options


def _stem(question: Question) -> str:
    if question.prompt is not None:
        return clean(question.prompt).strip()
    situation = clean(question.situation)
    mark = situation.find("?")
    return " ".join(situation[: mark + 1].split()) if mark >= 0 else ""


def _recommendation(question: Question, options: list[Option]) -> str | None:
    if question.recommend is None:
        return None
    wanted = question.recommend.strip().casefold()
    for option in options:
        if wanted in (str(option.value).casefold(), option.label.casefold()):
            return option.value
    values = ", ".join(str(o.value) for o in options)
    raise BadInput(f"--recommend {question.recommend!r} is not one of the options ({values})")


def ask(
    config: Config,
    question: Question,
    *,
    store: RequestStore | None = None,
    escalator: Escalator | None = None,
) -> Asked:
    if question.kind not in KINDS:
        raise UsageError(f"--kind {question.kind!r} is not one of {', '.join(KINDS)}")
    if question.request_id is not None:
        validate_id(question.request_id)
    if question.timeout_minutes is not None and question.timeout_minutes > MAX_MINUTES:
        # A record with it could not be read back: its block would stand with no question.
        raise UsageError(
            f"--timeout {question.timeout_minutes:g}: at most a year ({MAX_MINUTES:g} minutes)"
        )
    if not question.situation.strip():
        raise BadInput("the situation is empty; say in 1-3 sentences what blocks you")
    try:
        verdict = policy_mod.decide(
            clean(question.situation),
            policy=clean(question.policy),
            category=question.category,
            confidence=question.confidence,
            irreversible=question.irreversible,
            recommendation=question.recommend,
            escalate_words=config.policy.escalate_words,
            proceed_words=config.policy.proceed_words,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    needs_human, reason = verdict.needs_human, verdict.reason
    if question.kind != "question" and not needs_human:
        needs_human, reason = True, f"A {question.kind} always needs a human."
    if not needs_human:
        return Asked(False, reason, verdict.note)

    options = _options(question)
    stem = _stem(question)
    violations = rubric.check(stem, [o.label for o in options])
    if violations:
        rules = "; ".join(f"{v.rule}: {v.message}" for v in violations)
        raise BadInput(f"rubric: {rules}")
    recommendation = _recommendation(question, options)

    store = store or RequestStore(Workspace.of(config))
    escalator = escalator or Escalator(config, store=store)
    if escalator.store is not store:
        raise ValueError("the escalator must share the store")  # a programming error
    # SPEC §9: P0 asks, approvals and reviews keep abort; other questions wait (the config).
    irreversible = verdict.p0 or question.kind != "question"
    action = question.on_timeout or ("abort" if irreversible else config.escalation.timeout_action)
    minutes = question.timeout_minutes or config.escalation.timeout_minutes
    minutes = int(minutes) if float(minutes).is_integer() else minutes
    with store.locked():  # one lock from the key lookup to the write: one request per key
        found = store.find_open_by_key(question.key) if question.key else None
        if found is not None:
            unasked = escalator.awaits_own_block(found) or found.block == "none"
            if not (question.block and unasked):
                return Asked(True, reason, verdict.note, found, existing=True)
            # Asked without --block, or it joined a block that has gone since: raise it now.
            placed = escalator.place(found, persisted=True, own=True)
            if placed.joined:
                return Asked(True, reason, verdict.note, found, existing=True, joined=placed.joined)
            record = found
        else:
            record = Request(
                request_id=question.request_id or new_id(),
                prompt=mask_shapes(stem),
                request_key=question.key,
                kind=question.kind,
                situation=shown(question.situation).strip(),
                policy=shown(question.policy).strip(),
                options=options,
                recommendation=recommendation,
                timeout_default={"after_minutes": minutes, "action": action},
                context_refs=[shown(a) for a in question.attach],
                trigger=f"ask:{question.kind}",
                attempted=[f"policy check: {reason}"],
                review=_review(question),
            )
            record.needs_human = {
                "reason": reason,
                "p0": verdict.p0,
                "category": question.category,
                "confidence": question.confidence,
                "irreversible": question.irreversible,
            }
            routine = policy_mod.routine_answer(config.policy.answers, record)
            if routine is not None:
                # A routine question the policy answers: no block, nothing sent; the caller
                # answers it through the one door, and tells the human in one line.
                record.block = Block.NONE
                iteration = os.environ.get("LOOPKIT_ITERATION", "").strip()
                record.iteration = int(iteration) if iteration.isdigit() else None
                record.extra["asked_block"] = question.block  # an override asks it so again
                store.create(record)
                _log_asked(store, record, question, f"; [[policy.answers]] {routine[0]} answers it")
                return Asked(True, reason, verdict.note, record, policy=routine)
            if not question.block:
                record.block = Block.NONE  # a later `ask --key … --block` raises it
                store.create(record)
                _log_asked(store, record, question)
                return Asked(True, reason, verdict.note, record)
            placed = escalator.place(record, own=True)
    if placed.joined:
        return Asked(True, reason, verdict.note, placed.request, joined=placed.joined)
    outcome = escalator.deliver(record)  # outside the store lock: a send takes seconds
    fresh = store.load(record.request_id)
    return Asked(True, reason, verdict.note, fresh, existing=found is not None, outcome=outcome)


def _log_asked(store: RequestStore, record: Request, question: Question, note: str = "") -> None:
    """The ``asked`` event (and so its audit line) — for a record that was kept: a dry
    run's store keeps nothing, so nothing was asked."""
    if not store.writes:
        return
    log.info(
        "asked",
        request_id=record.request_id,
        kind=str(record.kind),
        question=fold(record.prompt),
        category=question.category,
        workspace=str(store.workspace.root),
        msg=f"asked: {fold(record.prompt, 120)} (requests/{record.request_id}.json{note})",
    )


def prompt_block(record: Request) -> str:
    """The mobile prompt block: stem · options · timeout default · context refs."""
    lines = [record.prompt]
    for index, option in enumerate(record.options):
        mark = "  (recommended)" if option.value == record.recommendation else ""
        lines.append(f"  {'ABC'[index] if index < 3 else index + 1}) {option.label}{mark}")
    timeout = record.timeout_default or {}
    lines.append(f"On timeout ({timeout.get('after_minutes')} min): {timeout.get('action')}")
    if record.context_refs:
        lines.append("Context: " + ", ".join(fold(ref, 120) for ref in record.context_refs))
    lines.append(f"Request: requests/{record.request_id}.json")
    return "\n".join(lines)
