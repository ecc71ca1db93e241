"""SPEC §9's reply forms: an option with a note, for every kind; yes/no for approvals."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from loopkit.requests.answer import APPROVAL_OPTIONS, QUESTION_OPTIONS, REVIEW_OPTIONS, parse_for
from loopkit.requests.record import Request

if TYPE_CHECKING:
    from loopkit.requests.record import Kind

OPTIONS = {"question": QUESTION_OPTIONS, "approval": APPROVAL_OPTIONS, "review": REVIEW_OPTIONS}


def request(kind: Kind) -> Request:
    return Request(request_id="r1", prompt="Q?", kind=kind, options=list(OPTIONS[kind]))


@pytest.mark.parametrize("kind", ["question", "approval", "review"])
@pytest.mark.parametrize(
    ("reply", "index", "note"),
    [
        ("B, this task is obsolete", 1, "this task is obsolete"),
        ("2: later", 1, "later"),
        ("A - use the v2 API", 0, "use the v2 API"),
        ("a) fine, go", 0, "fine, go"),
        ("C; stop   here", 2, "stop here"),
    ],
)
def test_a_letter_or_number_then_words_picks_and_keeps_the_note(
    kind: Kind, reply: str, index: int, note: str
) -> None:
    record = request(kind)
    decision, extra = parse_for(record, reply)
    assert decision.chosen_option == record.options[index].value
    assert extra["note"] == note


@pytest.mark.parametrize("reply", ["A but also fix it", "a.b", "B2", "Bob, hi"])
def test_without_a_separator_it_is_not_an_option_with_a_note(reply: str) -> None:
    decision, extra = parse_for(request("question"), reply)
    assert decision.chosen_option is None and "note" not in extra


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [
        ("yes", "approved"), ("Y", "approved"), ("approve", "approved"), ("OK!", "approved"),
        ("lgtm.", "approved"), ("👍", "approved"), ("no", "rejected"), ("N", "rejected"),
        ("rejected", "rejected"), ("deny!", "rejected"),
        ("yes but not today", "changes_requested"), ("nope", "changes_requested"),
    ],
)  # fmt: skip
def test_approvals_take_exact_yes_and_no_words(reply: str, outcome: str) -> None:
    _, extra = parse_for(request("approval"), reply)
    assert extra["outcome"] == outcome


def test_yes_words_do_not_approve_a_question() -> None:
    decision, _ = parse_for(request("question"), "yes")
    assert decision.chosen_option is None and decision.free_text == "yes"
