"""The five-line message every channel sends (SPEC section 3)."""

from __future__ import annotations

import re
from dataclasses import dataclass

LETTERS = "ABC"
MAX_FIELD = 280  # one line on a phone screen or two; the full text lives in BLOCKED.md

_SPACE = re.compile(r"\s+")


def clean(text: str) -> str:
    """Text that can always be written as UTF-8: lone surrogates (non-UTF-8 bytes from a
    command line) become U+FFFD, NUL bytes are dropped."""
    try:
        raw = text.encode("utf-8", "surrogateescape")  # the bytes a command line carried
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace").replace("\x00", "")


def fold(text: str, limit: int = MAX_FIELD) -> str:
    """One line: newlines, tabs and runs of spaces become one space; long text is cut."""
    line = _SPACE.sub(" ", text).strip()
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


@dataclass(frozen=True, slots=True)
class Message:
    request_id: str
    repo: str
    at: str  # ISO-8601 UTC, seconds
    question: str
    context: str
    attempted: tuple[str, ...]
    choices: tuple[str, ...]  # labels, at most three

    @property
    def text(self) -> str:
        attempted = "; ".join(fold(a) for a in self.attempted if a.strip()) or "nothing yet"
        choices = " | ".join(f"{LETTERS[i]}) {fold(c, 60)}" for i, c in enumerate(self.choices))
        return "\n".join(
            (
                f"[loopkit] blocked in {fold(self.repo, 100)} on {self.at}",
                f"Q: {fold(self.question)}",
                f"Context: {fold(self.context) or '-'}",
                f"Attempted: {fold(attempted)}",
                f"Choices: {choices or '-'}",
            )
        )
