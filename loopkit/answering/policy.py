"""Routine questions answered by ``[[policy.answers]]``, and a human's override (SPEC §30).

A question ``loopkit ask`` (or MCP's ``request_human_input``) finds routine — not P0, not an
approval, a review or a gate — and that an entry of ``[[policy.answers]]`` matches
(:func:`loopkit.escalation.policy.routine_answer`) is written without a block and answered
at once through the one door (:class:`~loopkit.answering.service.Answering`), ``by`` and
``via`` ``"policy"`` (:class:`~loopkit.answering.who.Policy`, which the service refuses for
anything but a routine question). The record keeps the entry and its ``why``; every surface
that shows who answered shows ``policy``. The human gets one line — ``[loopkit] answered by
policy in <repo>: <question> → <answer> (<why>)`` — naming how to override.

**Override** (``loopkit reply --request-id ID --reply override``, or :meth:`override`): while
the run that asked has not moved on — the same iteration of ``loopkit run`` is still going,
or the question was asked outside a supervisor — the request is reopened as a normal
question: open again, its block raised and its message sent, the policy's answer kept
beside it (``overridden``). Once the run has moved on, the override is recorded on the
request and left for the loop's next agent run as a note (``LOOPKIT_GUIDANCE``): the
answer it acted on was not the human's.
"""

from __future__ import annotations

import os

from loopkit import clock
from loopkit.answering.who import Answerer, Policy
from loopkit.datarecord import record
from loopkit.errors import LoopkitError, RequestConflict
from loopkit.escalation.policy import routine
from loopkit.log import get_logger
from loopkit.message import Notice, fold
from loopkit.requests.models import Status
from loopkit.workspace import Workspace
from loopkit.workspace.state import ALIVE, StateFile
from loopkit.workspace.steer import Notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.answering.service import Answered, Answering
    from loopkit.config import Config
    from loopkit.config.values import PolicyAnswer
    from loopkit.escalation.escalator import Escalator
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.policy")

OVERRIDE = "override"
BY = "policy"


def by_policy(record: Request) -> bool:
    """Whether ``record`` was answered by ``[[policy.answers]]``."""
    res = record.resolution
    return record.status == "resolved" and res is not None and res.by == BY and res.via == BY


def answer(
    service: Answering, config: Config, record: Request, number: int, entry: PolicyAnswer
) -> Answered:
    """Answer ``record`` with ``entry`` (``[[policy.answers]]`` number ``number``), then tell
    the human in one line. The service refuses anything but a routine question."""
    who = Answerer(
        by=BY,
        via=BY,
        origin=Policy(number, entry.why),
        about={"policy_entry": number, "policy_why": entry.why},
    )
    done = service.answer(record.request_id, entry.answer, who, confirmed=True)
    assert not hasattr(done, "question")  # confirmed: never a Confirm
    answered = done.record
    res = answered.resolution
    decision = res.parsed_decision if res else entry.answer
    log.info(
        "policy_answer",
        request_id=answered.request_id,
        entry=number,
        answer=entry.answer,
        decision=decision,
        why=entry.why,
        question=fold(answered.prompt),
        workspace=str(config.workspace),
        msg=f"answered by policy (entry {number}): {fold(answered.prompt, 80)} → {decision} "
        f"({entry.why})",
    )
    _tell(config, answered, str(decision), entry.why)
    return done


def fyi(record: Request, repo: str, decision: str, why: str) -> str:
    """The one line the human gets."""
    return (
        f"[loopkit] answered by policy in {fold(repo, 60)}: {fold(record.prompt, 120)} → "
        f"{fold(decision, 60)} ({fold(why, 120)}). To ask you instead: loopkit reply "
        f"--request-id {record.request_id} --reply override"
    )


def _tell(config: Config, record: Request, decision: str, why: str) -> None:
    """The FYI, on the first channel of the ladder (best effort: a policy answer never waits
    on a channel, and a failed send is only logged)."""
    from loopkit import channels

    ladder = [name for name in config.escalation.ladder if name != "none"]
    if not ladder or not config.channels:
        return
    repo = Workspace.of(config).repo_name()
    line = fyi(record, repo, decision, why)
    try:
        channel = channels.create(ladder[0], config.channels, budget=config.escalation.send_timeout)
        outcome = channel.send(Notice(repo, line.split(": ", 1)[1], agent="answered by policy"))
    except Exception as exc:  # an FYI never fails the answer
        log.warning("policy_fyi_failed", msg=f"the policy answer's FYI was not sent: {exc}")
        return
    if not outcome.ok:
        log.warning(
            "policy_fyi_failed", msg=f"the policy answer's FYI was not sent: {outcome.error}"
        )


@record(frozen=True, slots=True)
class Overridden:
    record: Request
    reopened: bool  # asked again now; else left for the next run

    @property
    def message(self) -> str:
        if self.reopened:
            return (
                f"request {self.record.request_id} reopened: the policy's answer is set aside "
                "and the question is asked as a normal one"
            )
        return (
            f"override of request {self.record.request_id} recorded: the run has moved on; its "
            "next agent run is told the policy's answer was not yours"
        )


def moved_on(record: Request, store: RequestStore) -> bool:
    """Whether the run that asked ``record`` has moved on: it was asked under ``loopkit run``
    (its iteration recorded) and the supervisor is past that iteration, or no longer runs."""
    if record.iteration is None:
        return False
    try:
        state = StateFile(store.workspace).load()
    except LoopkitError:
        return True
    return state.status not in ALIVE or state.iteration != record.iteration


def override(
    store: RequestStore, record: Request, who: Answerer, escalator: Escalator | None
) -> Overridden:
    """A human's override of a policy answer (see the module)."""
    who.check()
    if not by_policy(record):
        raise RequestConflict(
            f"request {record.request_id} was not answered by policy: there is nothing to override"
        )
    now = clock.iso_seconds()
    reopen = not moved_on(record, store) and routine(record)

    def take(current: Request) -> bool:
        if not by_policy(current):
            raise RequestConflict(f"request {current.request_id} was overridden already")
        kept = current.resolution.to_dict() if current.resolution else None
        entry = {"at": now, "by": who.by, "via": who.via, "policy_answer": kept,
                 "reopened": reopen}  # fmt: skip
        current.extra.setdefault("overridden", []).append(entry)
        if reopen:
            current.status, current.resolution = Status.OPEN, None
            current.applied_at = current.consumed_at = None
        return True

    fresh = store.update(record.request_id, take)
    log.info(
        "policy_override",
        request_id=fresh.request_id,
        by=who.by,
        via=who.via,
        reopened=reopen,
        question=fold(fresh.prompt),
        workspace=str(store.workspace.root),
        msg=f"{who.via}: {who.by} overrode the policy's answer to {fresh.request_id}"
        + (" (asked again)" if reopen else " (for the next run)"),
    )
    if reopen:
        if escalator is None:
            from loopkit import config as config_mod
            from loopkit.escalation.escalator import Escalator

            config = config_mod.load(store.workspace.root, lenient=True)
            escalator = Escalator(config, store=store)
        if fresh.extra.get("asked_block"):
            placed = escalator.place(fresh, persisted=True, own=True)
            if placed.joined is None:
                escalator.deliver(fresh)
        else:  # asked without a block: open again, and the human asked
            escalator.deliver(fresh)
    else:
        res_text = ""
        for item in fresh.extra.get("overridden", [])[-1:]:
            kept = item.get("policy_answer") or {}
            res_text = str(kept.get("parsed_decision") or "")
        Notes(store.workspace).add(
            f"The human overrode loopkit's policy answer to “{fold(fresh.prompt, 200)}” (it "
            f"answered {res_text!r}). Do not rely on it; ask again if it still matters.",
            by=who.by,
            via=who.via,
        )
    return Overridden(store.load(fresh.request_id), reopen)


def asked_iteration() -> int | None:
    """The supervisor's iteration this process runs in (``LOOPKIT_ITERATION``), if any."""
    value = os.environ.get("LOOPKIT_ITERATION", "").strip()
    return int(value) if value.isdigit() else None
