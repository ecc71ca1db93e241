from __future__ import annotations

from loopkit.message import Message, fold


def test_five_lines_in_order() -> None:
    message = Message(
        request_id="abc",
        repo="shop",
        at="2026-12-02T13:11:06Z",
        question="Which flow?\nPlease answer",
        context="checkout\tpay.py",
        attempted=("read PROMPT.md", "ran tests\nagain"),
        choices=("Flow A", "Flow B", "Stop"),
    )
    assert message.text.splitlines() == [
        "[loopkit] blocked in shop on 2026-12-02T13:11:06Z",
        "Q: Which flow? Please answer",
        "Context: checkout pay.py",
        "Attempted: read PROMPT.md; ran tests again",
        "Choices: A) Flow A | B) Flow B | C) Stop",
    ]


def test_fold_cuts_long_text() -> None:
    folded = fold("x" * 1000, 50)
    assert len(folded) == 50 and folded.endswith("…")
    assert fold("  a \r\n b\t\tc  ") == "a b c"


def test_empty_fields_still_five_lines() -> None:
    message = Message("id", "r", "t", "Q?", "", (), ("Go",))
    lines = message.text.splitlines()
    assert len(lines) == 5
    assert lines[2] == "Context: -"
    assert lines[3] == "Attempted: nothing yet"
