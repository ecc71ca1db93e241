"""SPEC §16, the human sees how they were understood: ``told_back`` says, from the record
alone, how a reply was read — the same line on every surface."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from loopkit.requests.answer import (
    APPROVAL_OPTIONS,
    REVIEW_OPTIONS,
    apply_reply,
    timed_out,
    unblocked_by_hand,
)
from loopkit.requests.models import Option
from loopkit.requests.reading import told_back
from loopkit.requests.record import Request
from loopkit.supervisor.triggers import CHOICES

if TYPE_CHECKING:
    from loopkit.requests.record import Kind

LOOP = [Option(c.label, c.value, c.consequence, c.aliases) for c in CHOICES]
FLOWS = [Option("Flow A", "flow-a"), Option("Flow B", "flow-b")]
OPTIONS = {"approval": list(APPROVAL_OPTIONS), "review": list(REVIEW_OPTIONS)}


def answered(reply: str, options: list[Option] = LOOP, kind: Kind = "question") -> Request:
    record = Request(request_id="r1", prompt="How do I go on?", kind=kind, options=options,
                     recommendation="skip" if options is LOOP else None)  # fmt: skip
    apply_reply(record, reply, by="ana", via="cli")
    return record


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        ("B, this task is obsolete",
         '→ B) Skip the task (letter B); note: "this task is obsolete"'),
        ("please rerun with -x",
         "→ no option matched: kept as free text; the agent gets it as a hint with Retry"),
        ("stop", '→ C) Abort the loop ("stop": another word for it)'),
        ("stop, I'll fix it by hand",
         '→ C) Abort the loop ("stop": another word for it); note: "I\'ll fix it by hand"'),
        ("skp teh task", '→ B) Skip the task ("skp teh task" read as a typo of it)'),
        ("3", "→ C) Abort the loop (number 3)"),
        ("Skip the task", "→ B) Skip the task (its label)"),
        ("sk", '→ B) Skip the task ("sk": the start of its label)'),
        ("retry", '→ A) Retry with a hint ("retry": the start of its label)'),
        ("your call", '→ B) Skip the task ("your call": the recommended option)'),
        ("stop?", "→ no option matched: kept as free text; the agent gets it as a hint with Retry"),
    ],
)  # fmt: skip
def test_a_questions_reading(reply: str, told: str) -> None:
    assert told_back(answered(reply)) == told


def test_free_text_to_an_agents_question_is_its_answer() -> None:
    assert told_back(answered("use Decimal, not float", FLOWS)) == (
        "→ no option matched: kept as free text; the agent gets it as your answer, in your words"
    )
    assert told_back(answered("flow-b", FLOWS)) == '→ B) Flow B ("flow-b": its value)'


@pytest.mark.parametrize(
    ("reply", "kind", "told"),
    [
        ("lgtm", "approval", '→ approved ("lgtm")'),
        ("not approved", "approval", '→ rejected ("not approved")'),
        ("no, it drops the prod table", "approval",
         '→ rejected ("no"); reason: "it drops the prod table"'),
        ("B, too risky", "approval", '→ rejected: B) Reject (letter B); reason: "too risky"'),
        ("approve", "approval", "→ approved: A) Approve (its label)"),
        ("approve if tests pass", "approval",
         "→ changes requested: no option, no unconditional yes or no; your words are the reason"),
        ("defer: no phone at hand", "review",
         '→ deferred: it stays open; reason: "no phone at hand"'),
        ("yes?", "review",
         "→ changes requested: no option, no unconditional yes or no; your words are the reason"),
    ],
)  # fmt: skip
def test_an_approvals_reading(reply: str, kind: Kind, told: str) -> None:
    assert told_back(answered(reply, OPTIONS[kind], kind)) == told


def test_a_request_not_answered_by_a_reply() -> None:
    record = Request(request_id="r1", prompt="Go on?", options=list(LOOP))
    assert told_back(record) == "→ not answered yet"
    record.status, record.resolution = "expired", timed_out("r1", "abort")
    assert told_back(record) == "→ expired: nobody answered in time; the timeout's action: abort"
    record.status, record.resolution = "resolved", unblocked_by_hand("r1", by="ana", via="cli")
    assert told_back(record) == "→ unblocked by hand: no answer, nothing chosen"


def test_a_record_from_before_matched_by_is_told_without_the_how() -> None:
    record = answered("B")
    assert record.resolution is not None
    record.resolution = record.resolution.with_fields({"matched_by": None})
    assert told_back(record) == "→ B) Skip the task"
