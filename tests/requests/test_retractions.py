"""SPEC §28, a retraction is not a choice: an option followed by a negation, a correction or
a retraction (``Deploy now - NOT``, ``Postgres — no``, ``5 replicas — no, 7``, ``A — scratch
that``, ``stop — no, continue``, ``never mind``, ``wait``, ``actually …``) is free text.

Hypothesis builds questions and, from each of their options (by its letter, label, value or
alias), replies that take it back: a negation after it, a correction to another number or
option, second thoughts. None of them may be read as that option — nor as any other."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reply_property import questions

from loopkit.requests.answer import APPROVAL_OPTIONS, parse_for
from loopkit.requests.models import Option
from loopkit.requests.record import Request
from loopkit.requests.replies import parse_reply
from loopkit.supervisor.triggers import CHOICES

LOOP = [Option(c.label, c.value, c.consequence, c.aliases) for c in CHOICES]
DEPLOY = [Option("Deploy now", "deploy-now"), Option("Wait", "wait")]
DB = [Option("PostgreSQL", "postgresql"), Option("MySQL", "mysql")]
REPLICAS = [Option("3 replicas", "3-replicas"), Option("5 replicas", "5-replicas")]


@pytest.mark.parametrize(
    ("reply", "options"),
    [
        ("Deploy now - NOT", DEPLOY), ("deploy now — not", DEPLOY), ("Deploy now. Not.", DEPLOY),
        ("Deploy now -NOT", DEPLOY), ("A - NOT", DEPLOY), ("Postgres — no", DB),
        ("postgres - nope", DB), ("PostgreSQL, no.", DB), ("postgres—no", DB),
        ("5 replicas — no, 7", REPLICAS), ("B - no, 7", REPLICAS), ("5 replicas, no 7", REPLICAS),
        ("A — scratch that", LOOP), ("stop — no, continue", LOOP), ("stop, never mind", LOOP),
        ("never mind", LOOP), ("skip - wait", LOOP), ("C, actually let it run", LOOP),
        ("abort, sorry, I mean keep going", LOOP), ("B, hold on", LOOP), ("A, jk", LOOP),
        ("retry - forget it", LOOP), ("C. Oops, ignore that", LOOP), ("skip, no no no", LOOP),
        ("Abort the loop — no!", LOOP), ("abort — not yet", LOOP), ("C: no, continue", LOOP),
        ("deploy now 👎", DEPLOY), ("A ❌", DEPLOY), ("A - cancel", DEPLOY),
        ("deploy now - hmm, no", DEPLOY), ("deploy now, I guess not", DEPLOY),
        ("Wait - wait, the other one", DEPLOY), ("postgres - disregard", DB),
    ],
)  # fmt: skip
def test_the_issues_retractions_are_free_text(reply: str, options: list[Option]) -> None:
    decision = parse_reply(reply, options)
    assert decision.chosen_option is None and decision.free_text == reply


@pytest.mark.parametrize(
    ("reply", "options", "chosen", "note"),
    [
        ("mysql, not postgres", DB, "mysql", "not postgres"),
        ("PostgreSQL, no MySQL", DB, "postgresql", "no MySQL"),
        ("C, no retry please", LOOP, "abort", "no retry please"),
        ("A, don't stop", LOOP, "retry", "don't stop"),
        ("C, the tests don't pass", LOOP, "abort", "the tests don't pass"),
        ("stop, I'll fix it by hand", LOOP, "abort", "I'll fix it by hand"),
        ("B, this task is obsolete", LOOP, "skip", "this task is obsolete"),
    ],
)  # fmt: skip
def test_a_negation_aimed_at_another_option_or_inside_a_reason_is_a_note(
    reply: str, options: list[Option], chosen: str, note: str
) -> None:
    decision = parse_reply(reply, options)
    assert (decision.chosen_option, decision.note) == (chosen, note)


def test_a_no_that_agrees_with_a_no_is_that_no() -> None:
    options = [Option("Yes", "yes"), Option("No", "no")]
    assert parse_reply("no, not yet", options).chosen_option == "no"
    assert parse_reply("B - no", options).chosen_option == "no"
    assert parse_reply("yes — no", options).chosen_option is None
    record = Request(request_id="a1", prompt="Merge?", kind="approval",
                     options=list(APPROVAL_OPTIONS))  # fmt: skip
    assert parse_for(record, "reject - no")[1]["outcome"] == "rejected"
    assert parse_for(record, "approve - no")[1]["outcome"] != "approved"


RETRACTIONS = [
    "no", "NO", "No.", "no!", "nope", "nah", "not", "NOT", "not that", "not yet", "no no",
    "no, {other}", "no - {other}", "not {self}", "no wait", "wait", "wait, {other}", "hold on",
    "scratch that", "scratch that, {other}", "never mind", "nevermind", "actually {other}",
    "actually no", "sorry, {other}", "I mean {other}", "i meant {other}", "make that {other}",
    "make it {other}", "correction: {other}", "oops", "ignore that", "forget it", "cancel that",
    "undo", "jk", "just kidding", "strike that", "on second thought, {other}", "rather {other}",
    "{other} instead", "or {other}", "no, {number}",
]  # fmt: skip
SEPARATORS = [" - ", ", ", ": ", " — ", " – ", "; ", "\n", ". ", "... ", " -- ", "! "]


@settings(max_examples=800, deadline=None)
@given(questions(), st.data())
def test_an_option_taken_back_is_free_text(options: list[Option], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(options) - 1))
    option = options[index]
    other = options[(index + 1) % len(options)]
    names = [option.label, option.label.lower(), string.ascii_uppercase[index], option.value]
    said = data.draw(st.sampled_from([name or option.label for name in names]))
    form = data.draw(st.sampled_from(RETRACTIONS))
    number = str(data.draw(st.integers(0, 99)))
    others = [other.label, string.ascii_uppercase[(index + 1) % len(options)], number,
              "the other one", "something else"]  # fmt: skip
    other_said = data.draw(st.sampled_from(others))
    words = form.format(other=other_said, self=said, number=number)
    if set(words.casefold().split()) <= set(option.label.casefold().split()):
        return  # "Wait - wait": the option's own words, said again
    if data.draw(st.booleans()):
        words = words.upper()
    reply = f"{said}{data.draw(st.sampled_from(SEPARATORS))}{words}"
    decision = parse_reply(reply, options)
    assert decision.chosen_option is None, (reply, [o.label for o in options])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["retry", "skip", "abort"]), st.data())
def test_the_loops_own_choices_taken_back_are_free_text(value: str, data: st.DataObject) -> None:
    """The supervisor's Retry / Skip / Abort by any of their names, aliases included."""
    option = next(o for o in LOOP if o.value == value)
    said = data.draw(st.sampled_from([option.label, option.value, *option.aliases]))
    form = data.draw(st.sampled_from(RETRACTIONS))
    other = data.draw(st.sampled_from(["continue", "keep going", "go on", "retry", "skip"]))
    words = form.format(other=other, self=said, number="2")
    reply = f"{said}{data.draw(st.sampled_from(SEPARATORS))}{words}"
    assert parse_reply(reply, LOOP).chosen_option is None, reply


def test_a_negation_inside_a_reason_keeps_the_note() -> None:
    """Only a negation that opens the words, aimed at no other option, takes the choice back."""
    options = [Option("Use the v2 API", "use-the-v2-api"), Option("Stay on v1", "stay-on-v1")]
    decision = parse_reply("B, v2 is not ready", options)
    assert (decision.chosen_option, decision.note) == ("stay-on-v1", "v2 is not ready")
