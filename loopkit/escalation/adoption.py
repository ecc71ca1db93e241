"""Adopting an agent's hand-written ``BLOCKED.md`` (SPEC section 9).

Seed 001 tells agents to write ``BLOCKED.md`` themselves and exit. A file without a loopkit
marker that appears while the agent runs is the agent's escalation: :func:`read` turns it
into an :class:`~loopkit.escalation.blockfile.Escalation` and the supervisor raises it as a
request (``trigger: "agent-file"``, ``block: "adopted"``) without touching the file.

Anything goes in such a file, so :func:`parse` never fails: the four sections are found by
their headings (``## Question:``, ``## Context:``, ``## Attempted:``, ``## Choices:``, any
case, the colon optional); missing ones are empty; choices are ``- A) label — consequence``
lines (the letter optional; where some lines are a list, only those), at most three,
duplicates made distinct; with no question
section the question is the file's first line of text. Only the first :data:`READ_LIMIT`
bytes are read, undecodable bytes replaced.
"""

from __future__ import annotations

import re

from loopkit import readfile
from loopkit.errors import BadInput, LoopkitError
from loopkit.escalation import blockfile
from loopkit.escalation.blockfile import Choice, Escalation, parse_choice
from loopkit.requests.record import Request
from loopkit.workspace.state import StateFile

TYPE_CHECKING = False
if TYPE_CHECKING:  # the escalator only when a hand-written block is read
    from pathlib import Path

    from loopkit.requests.store import RequestStore
    from loopkit.workspace import Workspace
    from loopkit.workspace.state import State

READ_LIMIT = 64 * 1024
MAX_CHOICES = 3
_HEADING = re.compile(r"^#{1,6}\s*(question|context|attempted|choices)\s*:?\s*$", re.I)
_ANY_HEADING = re.compile(r"^#{1,6}\s")
_CHOICE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*(?:[A-Za-z][).:]\s+)?(?P<text>\S.*)$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*")


def block_request(path: Path, store: RequestStore, remembered: str | None = None) -> str | None:
    """The request of the BLOCKED.md at ``path`` — the one place that decides it: its
    marker's; for a marker-less file (an agent's, adopted), ``remembered`` (the supervisor's
    open request) when that is an adopted request, else the newest open adopted one (a kill
    between adopting and saving the state is found so). None: no file there, something
    other than a file, or a human's own pause."""
    if blockfile.state(path) != "file":
        return None
    marked = blockfile.request_id_of(path)
    if marked is not None:
        return marked
    if remembered:
        try:
            if store.load(remembered).block == "adopted":
                return remembered
        except LoopkitError:
            pass
    return open_request(store)


def open_request(store: RequestStore) -> str | None:
    """The request of an agent's hand-written BLOCKED.md (it has no marker to name it): the
    newest open adopted one."""
    found = [
        r for _, r in store.all() if isinstance(r, Request) and r.block == "adopted" and r.is_open
    ]
    return found[-1].request_id if found else None


def read(path: Path) -> Escalation:
    """The escalation an agent's hand-written file stands for (never raises for content)."""
    try:
        raw = readfile.read_bytes(path, READ_LIMIT, follow_links=False)
    except OSError:
        raw = b""
    return parse(raw.decode("utf-8", "replace"))


def _sections(text: str) -> tuple[dict[str, list[str]], list[str]]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    loose: list[str] = []  # lines outside any of the four sections
    for line in text.replace("\x00", "").splitlines():
        heading = _HEADING.match(line.strip())
        if heading:
            current = heading.group(1).lower()
            sections.setdefault(current, [])
        elif _ANY_HEADING.match(line.strip()):
            current = None
            loose.append(line)
        elif current is not None:
            sections[current].append(line)
        else:
            loose.append(line)
    return sections, loose


def _text(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("<!--")]


def _question(sections: dict[str, list[str]], loose: list[str]) -> str:
    asked = _text(sections.get("question", []))
    if asked:
        return " ".join(asked)
    lines = _text(loose) or _text([line for body in sections.values() for line in body])
    titled = [line for line in lines if line.lstrip("#").strip().lower() != "blocked"]
    first = (titled or lines or ["The agent wrote BLOCKED.md"])[0]
    return _BULLET.sub("", first.lstrip("#").strip()) or "The agent wrote BLOCKED.md"


def _choices(lines: list[str]) -> list[Choice]:
    found: list[Choice] = []
    labels: set[str] = set()
    # Where some lines are a list, the list is the choices: a line of prose after it (the
    # answer hint loopkit writes, the agent's remark) is none.
    listed = [line for line in _text(lines) if _BULLET.match(line)]
    for line in listed or _text(lines):
        match = _CHOICE.match(line)
        if match is None or len(found) == MAX_CHOICES:
            continue
        try:
            choice = parse_choice(match["text"])
        except BadInput:
            continue
        label = choice.label
        number = 2
        while label.lower() in labels:
            label, number = f"{choice.label} ({number})", number + 1
        labels.add(label.lower())
        found.append(Choice(label, choice.consequence, choice.value if label == choice.label
                            else f"{choice.value}-{number - 1}"))  # fmt: skip
    return found


def parse(text: str) -> Escalation:
    sections, loose = _sections(text)
    attempted = [_BULLET.sub("", line) for line in _text(sections.get("attempted", []))]
    return Escalation(
        question=_question(sections, loose),
        context="\n".join(_text(sections.get("context", []))),
        attempted=[a for a in attempted if a],
        choices=_choices(sections.get("choices", [])),
        trigger="agent-file",
    )


def block_request_id(
    workspace: Workspace, store: RequestStore, state: State | None = None
) -> str | None:
    """The request of the BLOCKED.md there (:func:`block_request`); for something
    other than a file in its place, the request the supervisor remembers. None when not
    blocked."""
    remembered = (state or StateFile(workspace).load()).open_request
    if blockfile.state(workspace.blocked) == "other":
        return remembered
    return block_request(workspace.blocked, store, remembered)
