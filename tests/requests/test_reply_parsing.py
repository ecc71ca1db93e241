"""Reply parsing (SPEC section 4): the matching table, ambiguity, unicode and long replies."""

from __future__ import annotations

import pytest

from loopkit.datarecord import FrozenInstanceError
from loopkit.requests.models import Option
from loopkit.requests.replies import Decision, parse_reply

LOOP = [
    Option("Retry with a hint", "retry"),
    Option("Skip the task", "skip"),
    Option("Abort the loop", "abort"),
]
APPROVAL = [
    Option("Approve", "approved"),
    Option("Reject", "rejected"),
    Option("Request changes", "changes_requested"),
]
SKIPS = [
    Option("Skip tests", "skip_tests"),
    Option("Skip task", "skip_task"),
]
NESTED = [
    Option("Skip", "skip"),
    Option("Skip the task", "skip_task"),
]
ACCENTS = [
    Option("Café — open", "cafe_open"),
    Option("Crème brûlée", "dessert"),
]

CHOSEN = [
    # letters and numbers: bare, any case, a trailing ) . or :, surrounding whitespace
    ("A", LOOP, "retry", "letter"),
    ("b)", LOOP, "skip", "letter"),
    (" c: ", LOOP, "abort", "letter"),
    ("C.", APPROVAL, "changes_requested", "letter"),
    ("2.", LOOP, "skip", "number"),
    ("1", APPROVAL, "approved", "number"),
    ("\t3)\n", APPROVAL, "changes_requested", "number"),
    ("a", LOOP, "retry", "letter"),  # the letter A, not the prefix of "Abort the loop"
    # exact labels and prefixes, case- and whitespace-insensitive
    ("ret", LOOP, "retry", "prefix"),
    ("SKIP", LOOP, "skip", "prefix"),
    ("abort   the\tloop", LOOP, "abort", "label"),
    ("Retry with a hint", LOOP, "retry", "label"),
    ("appr", APPROVAL, "approved", "prefix"),
    ("rej", APPROVAL, "rejected", "prefix"),
    ("req", APPROVAL, "changes_requested", "prefix"),
    ("skip", NESTED, "skip", "label"),  # an exact label beats being a prefix of another
    ("skip t", NESTED, "skip_task", "prefix"),
    # values
    ("approved", APPROVAL, "approved", "value"),
    ("CHANGES_REQUESTED", APPROVAL, "changes_requested", "value"),
    ("skip_task", SKIPS, "skip_task", "value"),
    # typos
    ("retyr with a hint", LOOP, "retry", "fuzzy"),
    ("skp the task", LOOP, "skip", "fuzzy"),
    ("abort teh loop", LOOP, "abort", "fuzzy"),
    ("aprove", APPROVAL, "approved", "fuzzy"),
    ("rejcet", APPROVAL, "rejected", "fuzzy"),
    ("reqest changes", APPROVAL, "changes_requested", "fuzzy"),
    # unicode: NFKC folds fullwidth forms and composes accents; casefold handles case
    ("Ａ", LOOP, "retry", "letter"),
    ("ｂ）", LOOP, "skip", "letter"),
    ("２", LOOP, "skip", "number"),
    ("ＲＥＴ", LOOP, "retry", "prefix"),
    ("café", ACCENTS, "cafe_open", "prefix"),
    ("CAFÉ — OPEN", ACCENTS, "cafe_open", "label"),
    ("Cafe\u0301", ACCENTS, "cafe_open", "prefix"),  # decomposed é
    ("crème", ACCENTS, "dessert", "prefix"),
    ("creme brûlée", ACCENTS, "dessert", "fuzzy"),  # one accent missing: a typo
    ("abort!", LOOP, "abort", "prefix"),  # the start of its label, the "!" aside
]

FREE = [
    ("", LOOP),
    ("   \n\t ", LOOP),
    ("maybe", LOOP),
    ("maybe", APPROVAL),
    ("A but also fix the tests", LOOP),
    ("2 please", LOOP),
    ("AB", APPROVAL),
    ("D", LOOP),  # out of range, and no label starts with D
    ("d", [*LOOP[:2], Option("Defer", "defer")]),  # a single character is only an index
    ("4.", LOOP),
    ("0", LOOP),
    ("skip", SKIPS),  # prefix of both labels
    ("re", APPROVAL),  # prefix of Reject and Request changes
    ("skip tesk", SKIPS),  # a typo of both: the best is not clearly ahead
    ("skip tezts", [*SKIPS[:1], Option("Skip texts", "skip_texts")]),  # exact tie
    ("loop", LOOP),  # shares a word with a label, not a typo of it
    ("hint", LOOP),
    ("cafe", ACCENTS),  # an accent is not folded away: neither a prefix nor clearly a typo
    ("rty", [Option("Go", "retry"), Option("Stop", "stop")]),  # under the bar
    # SPEC §28: a typo is of a label only (a value or an alias matches exactly), of 5
    # letters or more, and never an English word that is not the option's own
    ("rtry", [Option("Go", "retry"), Option("Stop", "stop")]),
    ("retyr", [Option("Go", "retry"), Option("Stop", "stop")]),
    ("app", APPROVAL),  # a word of its own, not the start of "Approve"
    ("ski", LOOP),
    ("A", []),
    ("retry", []),
]


def assert_chosen(decision: Decision, value: str, matched_by: str) -> None:
    assert decision == Decision(
        chosen_option=value, free_text=None, parsed_decision=value, matched_by=matched_by
    )


def assert_free(decision: Decision, reply: str) -> None:
    assert decision == Decision(
        chosen_option=None,
        free_text=reply,
        parsed_decision=" ".join(reply.split()),
        matched_by="free_text",
    )


@pytest.mark.parametrize(("reply", "options", "value", "matched_by"), CHOSEN)
def test_reply_picks_an_option(
    reply: str, options: list[Option], value: str, matched_by: str
) -> None:
    assert_chosen(parse_reply(reply, options), value, matched_by)


@pytest.mark.parametrize(("reply", "options"), FREE)
def test_reply_is_free_text(reply: str, options: list[Option]) -> None:
    assert_free(parse_reply(reply, options), reply)


@pytest.mark.parametrize("reply", ["work on it", "Your call.", "YOU DECIDE!", " work  on it !"])
def test_delegation_picks_the_recommendation(reply: str) -> None:
    assert_chosen(parse_reply(reply, LOOP, recommendation="skip"), "skip", "recommendation")


@pytest.mark.parametrize("recommendation", [None, "escalate"])
def test_delegation_without_a_usable_recommendation_is_free_text(
    recommendation: str | None,
) -> None:
    assert_free(parse_reply("Work on it.", LOOP, recommendation=recommendation), "Work on it.")


def test_a_delegation_asked_back_is_free_text() -> None:
    assert_free(parse_reply(" work  on it ?", LOOP, recommendation="skip"), " work  on it ?")


def test_recommendation_does_not_override_an_explicit_choice() -> None:
    assert_chosen(parse_reply("A", LOOP, recommendation="skip"), "retry", "letter")


def test_delegation_is_not_fuzzy_matched_to_a_similar_label() -> None:
    options = [*LOOP[:2], Option("Work on CI", "ci")]
    assert_chosen(
        parse_reply("work on it", options, recommendation="retry"), "retry", "recommendation"
    )


def test_free_text_keeps_the_reply_verbatim_and_normalises_the_decision() -> None:
    reply = "  Please  retry,\n but\tonly once  "
    decision = parse_reply(reply, LOOP)
    assert decision.free_text == reply
    assert decision.parsed_decision == "Please retry, but only once"


def test_empty_reply_has_an_empty_decision() -> None:
    assert parse_reply("", LOOP).parsed_decision == ""


def test_ten_kilobyte_reply_starting_with_a_label_is_free_text() -> None:
    reply = "Retry with a hint " + "and here is a very long explanation " * 300
    assert len(reply) > 10_000
    assert_free(parse_reply(reply, LOOP), reply)


def test_option_values_are_returned_as_given_not_normalised() -> None:
    options = [Option("Ship it", "Ship_IT"), Option("Hold", "hold")]
    assert_chosen(parse_reply("ship_it", options), "Ship_IT", "value")


def test_more_than_three_options_are_indexed() -> None:
    options = [Option(f"Option {n}", f"v{n}") for n in range(1, 6)]
    assert_chosen(parse_reply("E", options), "v5", "letter")
    assert_chosen(parse_reply("5", options), "v5", "number")


def test_decision_is_frozen() -> None:
    decision = parse_reply("A", LOOP)
    with pytest.raises(FrozenInstanceError):
        decision.chosen_option = "abort"  # type: ignore[misc]


def test_an_option_without_a_value_decides_by_its_label_never_none() -> None:
    options = [Option("Yes", "yes"), Option("None of these", None)]
    decision = parse_reply("none of these", options)
    assert decision.chosen_option == "None of these"
    assert parse_reply("None", options).chosen_option != "None"
