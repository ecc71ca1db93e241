"""Adopting an agent's hand-written BLOCKED.md: whatever the file, a request results."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit.escalation.adoption import parse, read
from loopkit.message import Message

SEED = """# Blocked

## Question:
Which payment provider should checkout use?

## Context:
Feature: checkout. File: app/pay.py.
PROMPT.md names Stripe and Adyen.

## Attempted:
- read PROMPT.md: both are named
- grep the commits: no decision recorded

## Choices:
- A) Stripe — keeps the current SDK
- B) Adyen — needs a new contract
"""


def test_the_seed_shape_is_read_section_by_section() -> None:
    found = parse(SEED)
    assert found.question == "Which payment provider should checkout use?"
    assert (
        found.context == "Feature: checkout. File: app/pay.py.\nPROMPT.md names Stripe and Adyen."
    )
    assert found.attempted == [
        "read PROMPT.md: both are named",
        "grep the commits: no decision recorded",
    ]
    assert [(c.label, c.consequence) for c in found.choices] == [
        ("Stripe", "keeps the current SDK"), ("Adyen", "needs a new contract")
    ]  # fmt: skip
    assert found.trigger == "agent-file"


@pytest.mark.parametrize(
    ("text", "question", "choices"),
    [
        (
            "# Blocked\nI cannot find the API key for staging.\n",
            "I cannot find the API key for staging.",
            0,
        ),
        ("", "The agent wrote BLOCKED.md", 0),
        ("## Choices:\n- A) one\n- B) two\n- C) three\n- D) four\n", "A) one", 3),
        ("## question\nShould I?\n## choices\n- yes\n- yes\n", "Should I?", 2),
        ("## Question:\n\n## Context:\nctx\n", "ctx", 0),
    ],
)
def test_broken_files_still_make_a_question(text: str, question: str, choices: int) -> None:
    found = parse(text)
    assert found.question == question
    assert len(found.choices) == choices
    labels = [c.label.lower() for c in found.choices]
    assert len(set(labels)) == len(labels)  # duplicates made distinct


def test_a_huge_or_binary_file_is_read_in_part_and_fits_five_lines(tmp_path: Path) -> None:
    path = tmp_path / "BLOCKED.md"
    path.write_bytes(b"## Question:\n" + b"\xff\xfe why? " * 200_000 + b"\n## Choices:\n- A) go\n")
    found = read(path)
    assert "\ufffd" in found.question
    message = Message("r1", "repo", "2026-12-03T09:00:00Z", found.question, found.context,
                      tuple(found.attempted), tuple(c.label for c in found.choices))  # fmt: skip
    lines = message.text.splitlines()
    assert len(lines) == 5 and len(lines[1]) <= len("Q: ") + 120
    assert read(tmp_path / "absent").question == "The agent wrote BLOCKED.md"


def test_loopkits_own_block_read_again_has_its_choices_and_not_its_hint(tmp_path: Path) -> None:
    """A BLOCKED.md loopkit wrote, raised again from its sections (its record deleted): the
    answer hint under its choices is no choice C (SPEC §28: its buttons are the ones sent)."""
    from loopkit import config as config_mod
    from loopkit.escalation.blockfile import Escalation, parse_choice
    from loopkit.escalation.escalator import Escalator

    config = config_mod.load(tmp_path, {"LOOPKIT_HITL_CHANNEL": "none"})
    Escalator(config, commit=lambda _: None).escalate(
        Escalation("Which flow?", "checkout", ["read PROMPT.md"],
                   [parse_choice("Flow A — old API"), parse_choice("Flow B — migration")])
    )  # fmt: skip
    again = read(tmp_path / "BLOCKED.md")
    assert [c.label for c in again.choices] == ["Flow A", "Flow B"]
    assert (tmp_path / "BLOCKED.md").read_text().rstrip().splitlines()[-1].startswith("To answer")
