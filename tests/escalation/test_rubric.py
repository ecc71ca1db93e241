from __future__ import annotations

import pytest

from loopkit.escalation.rubric import MAX_LABEL, MAX_OPTIONS, MAX_STEM, Violation, check, find_emoji

OK_LABELS = ("Yes", "No")


def rules(prompt: str, labels: tuple[str, ...] = OK_LABELS) -> list[str]:
    return [v.rule for v in check(prompt, labels)]


def test_limits_match_the_spec() -> None:
    assert (MAX_STEM, MAX_LABEL, MAX_OPTIONS) == (120, 24, 3)


def test_a_good_question_passes() -> None:
    assert check("Use Postgres or SQLite for the cache?", ("Postgres", "SQLite")) == []


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("x" * 119 + "?", []),
        ("x" * 120 + "?", ["stem-length"]),
        ("  " + "x" * 119 + "?  \n", []),
        ("é" * 120, []),
        ("é" * 121, ["stem-length"]),
        ("", ["empty-stem"]),
        ("   \n\t", ["empty-stem"]),
    ],
)
def test_stem_length_boundary(prompt: str, expected: list[str]) -> None:
    assert rules(prompt) == expected


def test_stem_length_message_names_counts_and_fix() -> None:
    (violation,) = check("x" * 121, OK_LABELS)
    assert violation == Violation(
        "stem-length",
        "prompt is 121 characters; the rubric allows 120 — shorten it and link details "
        "with --attach",
    )


@pytest.mark.parametrize(
    ("prompt", "two"),
    [
        ("Use Postgres or SQLite?", False),
        ("Should I delete and recreate the index?", False),
        ("Should I skip the test and send the email?", False),
        ("Ship it now? (staging is green)", False),
        ("Pick the storage backend.", False),
        ("Merge the PR, or wait for review?", False),
        ("Ship it? Or wait?", True),
        ("Ship it?？", True),
        ("Should I merge and should I tag it?", True),
        ("Merge the PR and can I tag it?", True),
        ("Should I retry, or should I abort?", True),
        ("Bump the version, and also update the changelog?", True),
        ("Drop the cache; should I rebuild it?", True),
        ("Merge now but will you review later?", True),
    ],
)
def test_one_question_heuristic(prompt: str, two: bool) -> None:
    assert ("one-question" in rules(prompt)) is two


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ((), ["option-count"]),
        (("A",), []),
        (("A", "B", "C"), []),
        (("A", "B", "C", "D"), ["option-count"]),
    ],
)
def test_option_count_boundary(labels: tuple[str, ...], expected: list[str]) -> None:
    assert rules("Proceed?", labels) == expected


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("x" * 24, []),
        ("x" * 25, ["option-length"]),
        (" " + "x" * 24 + " ", []),
        ("", ["empty-option"]),
        ("   ", ["empty-option"]),
    ],
)
def test_option_length_boundary(label: str, expected: list[str]) -> None:
    assert rules("Proceed?", (label, "Other")) == expected


def test_option_length_message_names_the_option() -> None:
    (violation,) = check("Proceed?", ("Fine", "y" * 25))
    assert violation.rule == "option-length"
    assert violation.message.startswith("option B label 'yyyyy")
    assert "25 characters" in violation.message and "24" in violation.message


@pytest.mark.parametrize(
    ("labels", "duplicate"),
    [
        (("Skip", "skip "), True),
        (("Skip", "Retry", "SKIP"), True),
        (("Skip", "Skipped"), False),
    ],
)
def test_duplicate_options(labels: tuple[str, ...], duplicate: bool) -> None:
    assert ("duplicate-option" in rules("Proceed?", labels)) is duplicate


@pytest.mark.parametrize(
    ("text", "emoji"),
    [
        ("Ship it 🚀", "🚀"),
        ("Done ✅", "✅"),
        ("Sunny ☀", "☀"),
        ("Love ❤️", "❤\ufe0f"),
        ("Fine ✔", "✔"),
        ("Flag 🇩🇪", "🇩"),
        ("Team 👩‍💻", "👩"),
        ("Star ⭐", "⭐"),
        ("Wait ⏳", "⏳"),
        ("Key 1️⃣", "1\ufe0f"),
        ("Copy ©️", "©\ufe0f"),
        ("Plain — text · with → arrows", None),
        ("Copyright © and ™", None),
        ("Unicode: café, naïve, 日本語", None),
        ("Arrows ← ↔ ⇒ and bullets •", None),
    ],
)
def test_find_emoji(text: str, emoji: str | None) -> None:
    assert find_emoji(text) == emoji


@pytest.mark.parametrize(
    ("prompt", "labels", "expected"),
    [
        ("Ship it 🚀?", OK_LABELS, ["emoji"]),
        ("Ship it?", ("Yes 👍", "No"), ["emoji"]),
        ("Ship it — now → or later?", ("Now · fast", "Later"), []),
    ],
)
def test_emoji_rule(prompt: str, labels: tuple[str, ...], expected: list[str]) -> None:
    assert rules(prompt, labels) == expected


def test_every_violation_is_reported_in_order() -> None:
    found = check("🚀 " + "x" * 130 + "? And?", ("a", "A", "", "z" * 30))
    assert [v.rule for v in found] == [
        "stem-length",
        "one-question",
        "emoji",
        "option-count",
        "duplicate-option",
        "empty-option",
        "option-length",
    ]
    assert all("\n" not in v.message for v in found)
