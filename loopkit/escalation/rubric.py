"""The compose rubric (SPEC section 4): what a question must look like to reach a phone.

``check(prompt, labels)`` returns every violation, in a fixed order (stem first, then the
options in order), or ``[]`` when the question may be sent. It never raises; the caller
refuses with exit 65 and names the rule. Lengths are ``len`` of the stripped text, in
characters (not bytes): a stem of 120 passes and 121 fails; a label of 24 passes and 25 fails.

Rules (``Violation.rule``):

- ``empty-stem`` / ``stem-length``: the stem is blank / longer than ``MAX_STEM``.
- ``one-question``: the stem asks more than one thing. A heuristic that flags only clear
  cases: two or more question marks (``?`` or fullwidth ``？``), or a second ask joined on —
  ``and``/``or``/``but``/``then`` (optionally ``also``) followed by a modal and a subject
  (``and should I``, ``, or can we``, ``but will you``), ``, and also`` / `` and also ``, or
  ``;`` followed by a modal (``; should``). A choice inside one ask ("Use Postgres or
  SQLite?") and one compound action ("Should I delete and recreate the index?") pass; so,
  knowingly, does "Should I skip the test and send the email?" — telling two actions from
  one compound action needs more than a pattern, and a false refusal costs more here.
- ``option-count``: not 1–``MAX_OPTIONS`` options.
- ``empty-option`` / ``option-length`` / ``duplicate-option``: a blank label, a label longer
  than ``MAX_LABEL``, a label equal to an earlier one ignoring case and surrounding space.
- ``emoji``: a pictograph in the stem or a label — any code point in U+1F000–U+1FAFF
  (pictographs, emoticons, flags' regional indicators), U+2600–U+27BF (miscellaneous
  symbols and dingbats: ☀ ★ ✂ ✔ ❤, which phones draw as emoji), the emoji-presentation
  characters outside those blocks (⌚ ⏩ ⏰ ⏳ ◽ ⬛ ⭐ ⭕), and any character followed by the
  emoji variation selector U+FE0F or the keycap mark U+20E3 (©️, 1️⃣). ZWJ sequences are
  caught through their parts. Punctuation and arrows such as ``—``, ``·``, ``→``, ``©``
  (without U+FE0F) are plain text.
"""

from __future__ import annotations

import re

from loopkit.datarecord import record
from loopkit.message import find_emoji

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

MAX_STEM = 120
MAX_LABEL = 24
MAX_OPTIONS = 3


@record(frozen=True, slots=True)
class Violation:
    """One broken rule: a short id and a one-line message (what, where, how to fix)."""

    rule: str
    message: str


_MODAL = r"(?:should|shall|can|could|may|might|must|do|does|will|would)"
_JOINED_ASK = re.compile(
    rf"(?<!\w)(?:and|or|but|then)\s+(?:also\s+)?{_MODAL}\s+(?:I|we|you)(?!\w)"
    rf"|(?<!\w)and\s+also(?!\w)"
    rf"|;\s*{_MODAL}(?!\w)",
    re.IGNORECASE,
)


def check(prompt: str, labels: Sequence[str]) -> list[Violation]:
    """Every rubric violation of ``prompt`` and ``labels``; ``[]`` means it may be sent."""
    found: list[Violation] = []
    stem = prompt.strip()
    if not stem:
        found.append(Violation("empty-stem", "prompt is empty — give one question with --prompt"))
    else:
        if len(stem) > MAX_STEM:
            found.append(
                Violation(
                    "stem-length",
                    f"prompt is {len(stem)} characters; the rubric allows {MAX_STEM} — "
                    "shorten it and link details with --attach",
                )
            )
        why = _second_question(stem)
        if why is not None:
            found.append(
                Violation(
                    "one-question",
                    f"prompt asks more than one question ({why}) — ask one thing and "
                    "put the alternatives in --option",
                )
            )
        emoji = find_emoji(stem)
        if emoji is not None:
            found.append(
                Violation(
                    "emoji",
                    f"prompt contains emoji {emoji!r} — remove it; the rubric allows plain text",
                )
            )

    if not labels:
        found.append(Violation("option-count", f"no options — give 1–{MAX_OPTIONS} with --option"))
    elif len(labels) > MAX_OPTIONS:
        found.append(
            Violation(
                "option-count",
                f"{len(labels)} options; the rubric allows 1–{MAX_OPTIONS} — "
                "merge or drop some, and put detail in --attach",
            )
        )

    seen: dict[str, str] = {}
    for index, raw in enumerate(labels):
        label = raw.strip()
        where = f"option {_letter(index)}"
        if not label:
            found.append(Violation("empty-option", f"{where} has an empty label — name it"))
            continue
        if len(label) > MAX_LABEL:
            found.append(
                Violation(
                    "option-length",
                    f"{where} label {label!r} is {len(label)} characters; the rubric "
                    f"allows {MAX_LABEL} — shorten it and put the consequence in the value",
                )
            )
        key = label.casefold()
        if key in seen:
            found.append(
                Violation(
                    "duplicate-option",
                    f"{where} label {label!r} repeats option {seen[key]} — "
                    "make each label distinct",
                )
            )
        else:
            seen[key] = _letter(index)
        emoji = find_emoji(label)
        if emoji is not None:
            found.append(
                Violation(
                    "emoji",
                    f"{where} label {label!r} contains emoji {emoji!r} — remove it; "
                    "the rubric allows plain text",
                )
            )
    return found


def _second_question(stem: str) -> str | None:
    """Why ``stem`` looks like two questions, or ``None`` (see the module docstring)."""
    marks = stem.count("?") + stem.count("？")
    if marks >= 2:
        return f"{marks} question marks"
    joined = _JOINED_ASK.search(stem)
    if joined is not None:
        return f"{joined.group(0).strip()!r} joins a second ask"
    return None


def _letter(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else str(index + 1)
