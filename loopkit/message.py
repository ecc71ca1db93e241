"""The five-line message every channel sends (SPEC section 3)."""

from __future__ import annotations

import re

from loopkit.datarecord import record

LETTERS = "ABC"
MAX_FIELD = 280  # one line on a phone screen or two; the full text lives in BLOCKED.md
MAX_QUESTION = 120  # the mobile rubric (SPEC section 4): what a phone shows of the question
MAX_LABEL = 24  # ... and of a choice's label
_EMOJI_BLOCKS = ((0x1F000, 0x1FAFF), (0x2600, 0x27BF))
_EMOJI_PRESENTATION = frozenset(
    {0x231A, 0x231B, 0x23E9, 0x23EA, 0x23EB, 0x23EC, 0x23F0, 0x23F3, 0x25FD, 0x25FE}
    | {0x2B1B, 0x2B1C, 0x2B50, 0x2B55}
)
_VS16 = "\ufe0f"
_KEYCAP = "\u20e3"

_SPACE = r"\s+"  # compiled on first use, by re's cache (not at import: SPEC §20)


# C0 controls but tab and newline, DEL, C1 controls, and the bidi embeddings, overrides and
# isolates (U+202A-U+202E, U+2066-U+2069) that make text read other than it is.
_UNSAFE = "[\x01-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """Text that can always be written as UTF-8 and shown to a human as it reads: lone
    surrogates (non-UTF-8 bytes from a command line) become U+FFFD, NUL bytes are dropped,
    CRLF becomes LF, and every other control character — an ANSI/OSC escape, a BEL — and
    every bidi override is shown escaped (``\\x1b``, ``\\u202e``), never acted on, in the
    record, BLOCKED.md, the message and the terminal alike."""
    try:
        raw = text.encode("utf-8", "surrogateescape")  # the bytes a command line carried
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogatepass")
    decoded = raw.decode("utf-8", "replace").replace("\x00", "").replace("\r\n", "\n")
    return re.sub(_UNSAFE, _escaped, decoded)


def fold(text: str, limit: int = MAX_FIELD) -> str:
    """One line: newlines, tabs and runs of spaces become one space; long text is cut."""
    line = re.sub(_SPACE, " ", text).strip()
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def find_emoji(text: str) -> str | None:
    """The first emoji in ``text`` (with its modifier, if any), else ``None``."""
    for index, char in enumerate(text):
        after = text[index + 1 : index + 2]
        if _is_pictograph(ord(char)) or after in (_VS16, _KEYCAP):
            return char + after if after in (_VS16, _KEYCAP) else char
        if char in (_VS16, _KEYCAP) and index == 0:
            return char
    return None


def _is_pictograph(code: int) -> bool:
    return code in _EMOJI_PRESENTATION or any(lo <= code <= hi for lo, hi in _EMOJI_BLOCKS)


def strip_emoji(text: str) -> str:
    """``text`` without its emoji (and their modifiers), spaces folded."""
    kept = [c for c in text if not (_is_pictograph(ord(c)) or c in (_VS16, _KEYCAP, "\u200d"))]
    return " ".join("".join(kept).split())


def ask(what: str, question: str, limit: int = MAX_QUESTION) -> str:
    """``what: question`` in at most ``limit`` characters, one line: ``what`` (the context)
    is cut — never ``question``, the ask itself, which a human must always see whole."""
    question = fold(question, limit)
    room = limit - len(question) - 2
    if room < 2:
        return question
    return f"{fold(what, room)}: {question}"


def for_phone(text: str, limit: int) -> str:
    """The mobile rubric applied to what is sent: one line, no emoji, at most ``limit``."""
    return fold(strip_emoji(text), limit)


def age(seconds: float) -> str:
    """``45s``, ``12m``, ``2h``, ``1h30m``: how long a block has waited."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, rest = divmod(minutes, 60)
    return f"{hours}h{rest}m" if rest else f"{hours}h"


@record(frozen=True, slots=True)
class Button:
    """A one-tap answer on a push (SPEC §29): ``url`` answers choice ``label`` when tapped —
    or, ``confirm``, opens the page that asks the second tap of an irreversible approval."""

    label: str
    url: str
    confirm: bool = False


@record(frozen=True, slots=True)
class Message:
    request_id: str
    repo: str
    at: str  # ISO-8601 UTC, seconds
    question: str
    context: str
    attempted: tuple[str, ...]
    choices: tuple[str, ...]  # labels, at most three
    reply_to: int | str | None = None  # the block's message comes first: it replies to none
    link: str | None = None  # the request's page in the web inbox (an "Open" button)
    person: str | None = None  # who of [[escalation.people]] it goes to (SPEC §29)
    also_asked: tuple[str, ...] = ()  # the people asked before: "(also asked: …)"
    buttons: tuple[Button, ...] = ()  # one-tap answers, one per choice (ntfy)
    p0: bool = False  # what an answer lets happen cannot be undone
    gate: bool = False  # ... a gated command waits on it

    @property
    def labels(self) -> tuple[str, ...]:
        """The choices' labels as a phone shows them (the rubric's 24 characters, no emoji)."""
        return tuple(for_phone(c, MAX_LABEL) for c in self.choices)

    @property
    def text(self) -> str:
        """The five lines, with the mobile rubric applied (BLOCKED.md keeps the full text)."""
        attempted = "; ".join(fold(a) for a in self.attempted if a.strip()) or "nothing yet"
        choices = " | ".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(self.labels))
        asked = fold(", ".join(self.also_asked), 200)
        also = (f"(also asked: {asked})",) if self.also_asked else ()
        return "\n".join(
            (
                f"[loopkit] blocked in {fold(self.repo, 100)} on {self.at}",
                f"Q: {for_phone(self.question, MAX_QUESTION)}",
                f"Context: {fold(self.context) or '-'}",
                f"Attempted: {fold(attempted)}",
                f"Choices: {choices or '-'}",
                *also,
            )
        )


@record(frozen=True, slots=True)
class Reminder:
    """``[loopkit] still blocked in <repo> for 2h: <question>`` — one line, no buttons; on
    Telegram a reply to the block's message (``reply_to``)."""

    request_id: str
    repo: str
    question: str
    waited: float  # seconds since the human was asked
    reply_to: int | str | None = None
    choices: tuple[str, ...] = ()
    link: str | None = None  # the request's page in the web inbox
    person: str | None = None  # who of [[escalation.people]] it goes to

    @property
    def labels(self) -> tuple[str, ...]:
        return ()

    @property
    def text(self) -> str:
        question = for_phone(self.question, MAX_QUESTION)
        return (
            f"[loopkit] still blocked in {fold(self.repo, 100)} for {age(self.waited)}: {question}"
        )


@record(frozen=True, slots=True)
class Notice:
    """``[loopkit] <agent> in <repo>: <what it says>`` — one line, no block, no buttons."""

    repo: str
    question: str  # what the agent says (a permission prompt, "waiting for your input")
    request_id: str = ""
    reply_to: int | str | None = None
    choices: tuple[str, ...] = ()
    agent: str = "Claude Code"

    @property
    def labels(self) -> tuple[str, ...]:
        return ()

    @property
    def text(self) -> str:
        return f"[loopkit] {self.agent} in {fold(self.repo, 100)}: {for_phone(self.question, 200)}"


@record(frozen=True, slots=True)
class FollowUp:
    """``[loopkit] <repo>: <what became of the question>`` — told to a person who was asked,
    after the block's message (SPEC §29): who answered and via what, how a tap was read, or
    that the answer came too late. No buttons."""

    request_id: str
    repo: str
    said: str
    person: str | None = None
    link: str | None = None
    reply_to: int | str | None = None
    choices: tuple[str, ...] = ()
    question: str = ""

    @property
    def labels(self) -> tuple[str, ...]:
        return ()

    @property
    def text(self) -> str:
        return f"[loopkit] {fold(self.repo, 100)}: {self.said}"


Note = Message | Reminder | Notice | FollowUp  # what a channel sends


def one_way(note: Note) -> str:
    """What a one-way channel (a Slack webhook, Apprise, dial) sends: the note's text, ending
    with the request's page in the web inbox when ``LOOPKIT_INBOX_URL`` gives one — one tap
    opens the answer page (SPEC §21)."""
    link = getattr(note, "link", None)
    return f"{note.text}\nAnswer: {link}" if link else note.text
