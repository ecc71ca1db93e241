"""Turn a human's free-text reply into a decision (SPEC section 4, "Reply parsing").

Contract: ``parse_reply`` is pure (no I/O, no clock), never raises for any reply string and never
guesses. Replies and option texts are compared after NFKC + casefold and collapsing whitespace
runs, so ``"Ａ"`` is ``"a"`` and ``"Cafe\\u0301"`` is ``"café"``. The first step with an opinion
decides; a step that finds two or more options (with different values) is ambiguous, and an
ambiguous reply is free text — the later steps are not consulted:

1. ``"number"`` / ``"letter"``: the whole reply is one option's number or letter, optionally
   followed by ``)``, ``.`` or ``:`` (``"2."``, ``"b)"``, ``" c: "``). An index beyond the options
   is not an index match (the later steps still run). ``"A but also fix it"`` is not one.
2. ``"prefix"``: an exact label wins outright; otherwise the reply is a prefix of exactly one label.
3. ``"value"``: the reply equals an option's value.
4. ``"recommendation"``: the reply is "work on it", "your call" or "you decide" (trailing
   punctuation allowed) and ``recommendation`` is one option's value; without one — or with one no
   option carries — the reply is free text. Checked before fuzzy matching so that a delegation is
   never mistaken for a label it happens to resemble.
5. ``"fuzzy"``: the best option scores at least ``FUZZY_THRESHOLD`` and leads the runner-up by at
   least ``FUZZY_MARGIN``. A reply much longer than every label and value is not compared at all.
6. ``"free_text"``: anything else, including an empty reply.

A chosen option yields ``chosen_option == parsed_decision == value`` and ``free_text is None``;
free text yields ``chosen_option is None``, ``free_text`` the reply verbatim and
``parsed_decision`` the reply with whitespace runs collapsed and ends stripped (``""`` when empty).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rapidfuzz import fuzz

from loopkit.requests.models import Option

MatchedBy = Literal["letter", "number", "prefix", "value", "fuzzy", "recommendation", "free_text"]

# fuzz.ratio is the normalised Indel similarity: one typo in a 5-letter word ("abrot") scores 80,
# one in a phrase scores 90+, while unrelated words stay under 50. WRatio is not used: its
# partial/token scorers give 90 to a reply that merely shares one word with a label ("loop").
FUZZY_THRESHOLD = 80.0
FUZZY_MARGIN = 10.0
# Beyond this many times the longest option text (+ slack) a reply is prose, not a typo of a label.
FUZZY_MAX_LENGTH_FACTOR = 3
FUZZY_MAX_LENGTH_SLACK = 10

_INDEX = re.compile(r"(?P<letter>[a-z])[).:]?|(?P<number>[0-9]+)[).:]?")
_DELEGATION = re.compile(r"(?:work on it|your call|you decide)[\s.!?]*")


@dataclass(frozen=True, slots=True)
class Decision:
    chosen_option: str | None  # the option's value, or None
    free_text: str | None  # the verbatim reply when no option was chosen, else None
    parsed_decision: str  # the option's value, or the whitespace-normalised reply
    matched_by: MatchedBy


@dataclass(frozen=True, slots=True)
class _Option:
    value: str  # as given: this is what a decision carries
    label_key: str  # normalised for comparison
    value_key: str


def parse_reply(
    reply: str, options: Sequence[Option], recommendation: str | None = None
) -> Decision:
    """Match ``reply`` against ``options`` (their label and value) as the module states."""
    text = _normalise(reply)
    if not text:
        return _free(reply)
    choices = [_option(o) for o in options]
    index = _by_index(text, choices)
    if index is not None:
        return _chosen(*index)
    by_label = _by_label(text, choices)
    if by_label:
        return _decide(reply, by_label, "prefix")
    by_value = _by_value(text, choices)
    if by_value:
        return _decide(reply, by_value, "value")
    if _DELEGATION.fullmatch(text):
        return _decide(reply, _by_recommendation(recommendation, choices), "recommendation")
    return _decide(reply, _by_fuzzy(text, choices), "fuzzy")


def _normalise(text: str) -> str:
    """NFKC + casefold (and NFKC again: casefold can un-normalise), whitespace runs collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def _option(option: Option) -> _Option:
    value = str(option.value)
    return _Option(value=value, label_key=_normalise(option.label), value_key=_normalise(value))


def _by_index(text: str, choices: list[_Option]) -> tuple[_Option, MatchedBy] | None:
    """A bare letter or number naming an existing option."""
    match = _INDEX.fullmatch(text)
    if match is None:
        return None
    if match["letter"] is not None:
        position = string.ascii_lowercase.index(match["letter"])
        kind: MatchedBy = "letter"
    else:
        position = int(match["number"]) - 1
        kind = "number"
    if 0 <= position < len(choices):
        return choices[position], kind
    return None


def _by_label(text: str, choices: list[_Option]) -> list[_Option]:
    """Options whose label is ``text`` exactly; failing that, those it is a prefix of."""
    exact = [c for c in choices if c.label_key == text]
    return exact or [c for c in choices if c.label_key.startswith(text)]


def _by_value(text: str, choices: list[_Option]) -> list[_Option]:
    return [c for c in choices if c.value_key == text]


def _by_recommendation(recommendation: str | None, choices: list[_Option]) -> list[_Option]:
    if recommendation is None:
        return []
    wanted = _normalise(recommendation)
    return [c for c in choices if c.value_key == wanted]


def _by_fuzzy(text: str, choices: list[_Option]) -> list[_Option]:
    """The one option clearly closest to ``text``, or nothing: a near tie is not a match."""
    if not choices or len(text) > _fuzzy_length_limit(choices):
        return []
    scored = sorted(
        ((max(fuzz.ratio(text, c.label_key), fuzz.ratio(text, c.value_key)), c) for c in choices),
        key=lambda pair: pair[0],
        reverse=True,
    )
    best_score, best = scored[0]
    runner_up = scored[1][0] if len(scored) > 1 else 0.0
    if best_score >= FUZZY_THRESHOLD and best_score - runner_up >= FUZZY_MARGIN:
        return [best]
    return []


def _fuzzy_length_limit(choices: list[_Option]) -> int:
    longest = max(max(len(c.label_key), len(c.value_key)) for c in choices)
    return FUZZY_MAX_LENGTH_FACTOR * longest + FUZZY_MAX_LENGTH_SLACK


def _decide(reply: str, found: list[_Option], matched_by: MatchedBy) -> Decision:
    """One option (or several sharing one value) is a choice; none or a real tie is free text."""
    if found and len({c.value for c in found}) == 1:
        return _chosen(found[0], matched_by)
    return _free(reply)


def _chosen(option: _Option, matched_by: MatchedBy) -> Decision:
    return Decision(
        chosen_option=option.value,
        free_text=None,
        parsed_decision=option.value,
        matched_by=matched_by,
    )


def _free(reply: str) -> Decision:
    return Decision(
        chosen_option=None,
        free_text=reply,
        parsed_decision=" ".join(reply.split()),
        matched_by="free_text",
    )
