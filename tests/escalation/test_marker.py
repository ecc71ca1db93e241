"""The hand-written marker parser (``check`` imports no ``re``) agrees with the regex it
replaced, on any text."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from loopkit.escalation.marker import (
    MARKER_WINDOW,
    read_head,
    request_id_in,
    request_id_of,
    shown_head,
)

_REFERENCE = re.compile(r"<!--\s*loopkit request:\s*([A-Za-z0-9][A-Za-z0-9_-]{0,63})\s*-->")


def reference(text: str) -> str | None:
    found = _REFERENCE.search(text[:MARKER_WINDOW])
    return found.group(1) if found else None


pieces = st.sampled_from(
    [
        "<!--",
        "-->",
        "loopkit request:",
        " ",
        "\n",
        "\t",
        "abc",
        "3f9a1c0b7d2e",
        "x_y-z",
        "-",
        "..",
        "é",
    ]
)


@given(st.lists(pieces, max_size=12).map("".join))
def test_the_parser_agrees_with_the_regex(text: str) -> None:
    assert request_id_in(text) == reference(text)


@given(st.text(max_size=200))
def test_arbitrary_text_agrees_too(text: str) -> None:
    assert request_id_in(text) == reference(text)


def test_the_marker_is_looked_for_in_the_window_only() -> None:
    early = "<!-- loopkit request: abc123 -->"
    assert request_id_in(early) == "abc123"
    assert request_id_in("x" * MARKER_WINDOW + early) is None
    assert request_id_in("<!-- loopkit request: ../x -->") is None
    assert request_id_in("<!-- note --> <!-- loopkit request: second -->") == "second"


def test_files_are_read_with_their_head(tmp_path: Path) -> None:
    path = tmp_path / "BLOCKED.md"
    path.write_bytes(b"# Blocked\n<!-- loopkit request: r1 -->\n\xff\n" + b"line\n" * 40)
    assert request_id_of(str(path)) == "r1"
    head = read_head(str(path))
    assert head.count("\n") == 30 and "\ufffd" in head
    assert request_id_of(str(tmp_path / "absent")) is None


def test_the_head_shown_is_escaped_cut_and_read_within_bounds(tmp_path: Path) -> None:
    """SPEC §28: what `check` and `run --exit-on-block` print of BLOCKED.md."""
    path = tmp_path / "BLOCKED.md"
    path.write_text("")
    assert shown_head(str(path)) == ""
    path.write_text("no newline at the end")
    assert shown_head(str(path)) == "no newline at the end\n"
    path.write_text("".join(f"line {n}\n" for n in range(50)))
    assert shown_head(str(path)).splitlines() == [f"line {n}" for n in range(30)]
    path.write_text("a\x1b[2Jb\tc\r\n\u202etxt\x9b\x00\n" + "z" * 10_000_000)
    lines = shown_head(str(path)).splitlines()
    assert lines[:2] == ["a\\x1b[2Jb\tc", "\\u202etxt\\x9b\\x00"]
    assert lines[2] == "z" * 199 + "…"
