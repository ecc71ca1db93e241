"""Turn a human's reply into a decision (SPEC sections 4, 9 and 16: replies never guess).

Contract: :func:`parse_reply` (any request's options) and :func:`parse_verdict` (an
approval's or a review's) are pure (no I/O, no clock), never raise for any reply string and
never guess: the result is the option the human named, or free text. Replies and option
texts are compared after NFKC + casefold and collapsing whitespace runs (``"Ａ"`` is ``"a"``).

An empty reply is free text, and so is one that ends with a question mark (``yes?``,
``Postgres?``: a question back, not an answer) unless it is an option's label. Otherwise the
first step with an opinion decides; a step that finds options with different values is
ambiguous, and an ambiguous reply is free text:

1. ``"letter"`` / ``"number"``: the reply is an option's letter or number (``B``, ``b)``,
   ``2.``), alone or followed by a separator and words (``B, this task is obsolete``: the
   words are the ``note``). A single character is only ever an index: ``D`` on a two-option
   question is free text, never the first letter of a label. The words make the reply free
   text when they name a *different* option (its label, a unique prefix of it, its value,
   an alias, its letter) or negate the one picked (``A - don't use the v2 API``). A number
   is no index when an option's label holds a number (``2`` on "2 nodes / 4 nodes"), nor a
   letter that another option's label has as a word (``A`` on "Plan B / Plan A").
2. ``"label"``: the reply is an option's label.
3. ``"prefix"``: the reply is the start of exactly one label — two characters or more, not
   ending inside a number, and a negation only where the label has it (``no`` is not "Now").
4. ``"value"`` / ``"alias"``: the reply is an option's value or one of its aliases (``stop``
   for "Abort the loop"). Steps 2–4 also take a label, unique prefix, value or alias
   followed by a separator and words (``stop, I'll fix it by hand``), on step 1's terms.
5. ``"recommendation"``: "work on it", "your call" or "you decide" picks ``recommendation``
   when an option carries it (else free text). Before fuzzy matching, so that a delegation
   is never mistaken for a label it resembles.
6. ``"fuzzy"``: a typo — within a slip or two (:mod:`~loopkit.requests.typos`) of exactly one
   option's label, value or alias, or of the start of its label (``Postgress``). Never when
   the numbers differ (``use the v1 API`` is not "Use the v2 API"), when the reply carries a
   negation the option's text does not (``not``, ``no``, ``don't``, ``never``, ``without``,
   ``instead of``, ``rather than``, ``un-``/``dis-`` before the option's word), nor when it
   holds another option's distinguishing word (``postgres or mysql``).
7. ``"free_text"``: anything else.

A chosen option yields ``chosen_option == parsed_decision == value`` and ``free_text is
None``; free text yields ``chosen_option is None``, ``free_text`` the reply verbatim and
``parsed_decision`` the reply with whitespace runs collapsed and ends stripped.

:func:`parse_verdict` reads an approval (Approve / Reject / Request changes) or a review
(Approve / Request changes / Defer) by the same steps — a label or value may also be
followed by words after a plain space (``reject not on a Friday``) — and then: an approval
must be unconditional (words after it with a condition or second thoughts, ``if``,
``unless``, ``once``, ``but``, ``wait``, a negation, …, make it feedback); for an approval,
section 9's yes words (``yes y approve approved ok lgtm 👍``) approve and its no words
(``no n reject rejected deny``) reject, alone or before a separator and words, and a negated
approval (``not approved``, ``disapprove``, ``don't approve``) rejects. Everything else is
``changes_requested`` (``matched_by == "free_text"``) with the whole reply as its ``note``.
"""

from __future__ import annotations

import re
import string
import unicodedata

from loopkit.datarecord import record
from loopkit.requests.dictionary import inflected, is_word
from loopkit.requests.models import Option
from loopkit.requests.typos import slips
from loopkit.requests.words import (
    ALONE_TAKE_BACK,
    NO_EMOJI,
    NOTHING,
    QUALIFIERS,
    STOPWORDS,
    TURN,
    WORD,
    negated_at,
    negated_word,
    negations,
    normalise,
    numbers_in,
    taken_back,
    words_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Literal

if TYPE_CHECKING:
    MatchedBy = Literal[
        "letter",
        "number",
        "label",
        "prefix",
        "value",
        "alias",
        "recommendation",
        "fuzzy",
        "yes",
        "no",
        "free_text",
    ]

_INDEX = re.compile(r"(?:(?P<letter>[a-z])|(?P<number>[0-9]+))[).:]?")
# "B, this task is obsolete" / "2: later" / "A - use the v2 API" / "b) fine": an index, words.
_INDEXED = re.compile(
    r"\s*(?P<index>[A-Za-z]|[0-9]{1,2})\s*(?:[,:;)]|\.(?=\s)|\s[-–—]+|[-–—]+\s|\n)\s*(?P<words>\S.*)",
    re.S,
)
# Where a label, value or alias may end and words begin ("stop, I'll fix it by hand").
_SEPARATOR = re.compile(r"\s*(?:[,:;]|\s[-–—]+\s|\n)\s*|\s+(?=because\b)", re.IGNORECASE)
# Words that start by naming another option by its letter: "B", "B, …", "B or C".
_LEADING_INDEX = re.compile(
    r"(?:(?P<letter>[a-z])|(?P<number>[0-9]{1,2}))(?:[).:,;/&]|\s+(?:or|and)\b|$)"
)
# Further on in the words, an option written by its index: a capital letter standing alone
# ("A, no wait, C"; never the article "a") or a number standing alone that ends a clause or
# follows second thoughts ("2, or 3"; never the count in "keep 3 replicas").
_LONE_INDEX = re.compile(
    r"(?<![\w'’-])(?:(?P<letter>[A-Z])|(?P<number>[0-9]{1,2}))(?![\w'’-])"
    r"(?P<end>\s*(?:[).,;:!?]|$))?"
)
# An index with quotes or brackets around it, or a mark after it: "(A)", "“B”", "A!", "A 👍".
# Never a "?" (a question back) nor a sign before it ("-1", "+1": a vote, not option 1).
_AROUND = "\\s\"'“”‘’«»\u200b\ufe0f👍✅\U0001f3fb-\U0001f3ff"
_DECORATED_INDEX = rf"[{_AROUND}(\[{{]*(?P<index>[a-z]|[0-9]{{1,2}})[{_AROUND})\]}}.!,;:…]*"
_DELEGATION = re.compile(r"(?:work on it|your call|you decide)[\s.!]*")
# Words that make an approval conditional or second-guessed: feedback, never an approval.
_HEDGES = QUALIFIERS | NOTHING | frozenset({
    "when", "whenever", "once", "after", "before", "until", "till", "wait", "hold", "later",
    "maybe", "perhaps", "probably", "tomorrow", "tonight", "yet", "reject", "rejected", "deny",
    "denied",
})  # fmt: skip
_HEDGE_PHRASES = ("as long as", "as soon as")
YES_WORDS = frozenset({"yes", "y", "approve", "approved", "ok", "lgtm", "👍", "✅"})
NO_WORDS = frozenset({"no", "n", "reject", "rejected", "deny", "👎"})
# An option that says yes (a negation after it takes it back, SPEC §28) or no (a negation
# after it agrees: "no, not yet").
_SAYS_YES = YES_WORDS | {"allow", "proceed", "continue", "confirm", "accept", "go", "sure"}
_SAYS_NO = NO_WORDS | {"denied", "decline", "nope"}
_NEGATED_APPROVAL = re.compile(
    r"(?:not|never|do not|don't|dont) (?:approve|approved|ok|okay|lgtm|yes)"
    r"|(?:dis|un)approved?|disapproval"
)
_MIN_PREFIX = 2  # characters: a single one is only ever an index
_MIN_TYPO_PREFIX = 4  # the start of a label a typo may be of ("postgres" of "PostgreSQL")
_MIN_TYPO_TEXT = 3  # a shorter option text is never fuzzy-matched
_MIN_TYPO_LETTERS = 5  # a reply of fewer letters (or digits) is never a typo (SPEC §28)
# What may stand beside a P0 request's yes: punctuation, and a thumbs-up or a check mark
# (skin tones and emoji presentation included). Zero-width characters are nothing.
_THUMBS = "👍✅"
_BESIDE = "\ufe0f\u200b\u200c\u200d\u2060\ufeff"
_SKIN_TONES = ("\U0001f3fb", "\U0001f3ff")
_ENDINGS = " .!" + _THUMBS + _BESIDE + "".join(map(chr, range(0x1F3FB, 0x1F400)))
_APPROVING = ("approved", "always")  # a verdict that lets the action happen
# Words of an order or a change of mind, never of a reason that opens with "no".
_ORDERS = frozenset({
    "i", "i'm", "im", "we", "let", "let's", "lets", "go", "keep", "pick", "choose", "take",
    "use", "do", "other", "another", "different", "continue", "proceed", "stop", "want",
    "meant", "mean", "should", "rather", "don't", "dont",
})  # fmt: skip


@record(frozen=True, slots=True)
class Decision:
    chosen_option: str | None  # the option's value, or None
    free_text: str | None  # the verbatim reply when no option was chosen, else None
    parsed_decision: str  # the option's value, or the whitespace-normalised reply
    matched_by: MatchedBy
    note: str | None = None  # the words after the option ("B, this task is obsolete")


@record(frozen=True, slots=True)
class _Option:
    index: int
    value: str  # as given: this is what a decision carries
    label: str  # normalised for comparison, as the other texts
    value_key: str
    aliases: tuple[str, ...]
    letters: frozenset[str]  # single letters standing as words in its label ("Plan A")

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(t for t in (self.label, self.value_key, *self.aliases) if t)

    @property
    def words(self) -> frozenset[str]:
        return frozenset(w for t in self.texts for w in words_of(t))


@record(frozen=True, slots=True)
class _Read:
    """A step's opinion: the options it found (none: free text) and how."""

    found: tuple[_Option, ...]
    matched_by: MatchedBy
    note: str | None = None


_FREE = _Read((), "free_text")


def parse_reply(
    reply: str,
    options: Sequence[Option],
    recommendation: str | None = None,
    *,
    p0: bool = False,
) -> Decision:
    """Match ``reply`` against ``options`` as the module states (steps 1–7); ``p0``: only
    the option alone chooses it."""
    decision = _decide(reply, _read(reply, options, recommendation, loose=False))
    if p0 and decision.chosen_option is not None and not alone(reply, options, decision):
        return _decide(reply, _FREE)
    return decision


def parse_verdict(
    reply: str,
    options: Sequence[Option],
    kind: str,
    recommendation: str | None = None,
    *,
    p0: bool = False,
) -> Decision:
    """An approval's or a review's decision: ``chosen_option`` is the outcome (approved,
    rejected, changes_requested, deferred); feedback is ``changes_requested`` with
    ``matched_by == "free_text"`` and the reply as ``note``. ``p0``: only a yes, the
    approve label, value, letter or number alone approves."""
    words = " ".join(reply.split())
    feedback = Decision("changes_requested", None, "changes_requested", "free_text", words or None)
    read = _read(reply, options, recommendation, loose=True)
    if read.found and read.found[0].value == "approved" and not unconditional(read.note):
        read = _FREE
    decision = _decide(reply, read) if read.found else None
    if decision is None and kind == "approval":
        verdict = _yes_or_no(reply)
        if verdict is not None:
            outcome, note = verdict
            matched_by: MatchedBy = "yes" if outcome == "approved" else "no"
            decision = Decision(outcome, None, outcome, matched_by, note)
    if decision is None or decision.chosen_option is None:
        return feedback
    if p0 and decision.chosen_option in _APPROVING and not alone(reply, options, decision):
        return feedback
    return decision


def alone(reply: str, options: Sequence[Option], decision: Decision) -> bool:
    """Whether ``reply`` is the chosen option alone (SPEC §28, P0): its letter, number,
    label, value or an alias — for an approval, also yes words — with nothing beside them
    but punctuation, 👍 or ✅. ``approve 👍`` and ``A)`` are alone; ``approve nothing``,
    ``approve 0``, ``approve: false`` and ``aprove`` are not."""
    bare, thumbs = _bare(reply)
    for index, option in enumerate(options):
        choice = _option(index, option)
        if choice.value != decision.chosen_option:
            continue
        if choice.value == "approved" and (
            (not bare and thumbs) or (bare and set(bare.split()) <= YES_WORDS)
        ):
            return True
        names = {_bare(t)[0] for t in (option.label, choice.value, *option.aliases)}
        if bare in names | {string.ascii_lowercase[index] if index < 26 else "", str(index + 1)}:
            return True
    return False


def _bare(text: str) -> tuple[str, bool]:
    """``text`` without its punctuation, thumbs-up and check marks (as :func:`normalise`
    gives it), and whether it had a thumbs-up or a check mark."""
    kept, thumbs = [], False
    for char in unicodedata.normalize("NFKC", text):
        if char in _THUMBS:
            thumbs = True
        elif not (
            unicodedata.category(char).startswith("P")
            or char in _BESIDE
            or _SKIN_TONES[0] <= char <= _SKIN_TONES[1]
        ):
            kept.append(char)
            continue
        kept.append(" ")
    return normalise("".join(kept)), thumbs


def unconditional(words: str | None) -> bool:
    """Whether the words after an approval leave it standing: no condition (``if``,
    ``once``, ``as long as``), no contrast or alternative (``but``, ``only``, ``instead``),
    no second thoughts (``wait``, ``scratch that``), no negation, nothing that says nothing
    (``nothing``, ``false``, ``0``), no rejection, no question."""
    if not words:
        return True
    key = normalise(words)
    tokens = words_of(key)
    return not (
        "?" in key
        or negations(tokens)
        or any(t in _HEDGES for t in tokens)
        or any(phrase in key for phrase in _HEDGE_PHRASES)
        or bool(taken_back(key))
    )


def asks_back(text: str) -> bool:
    """A reply ending with a question mark is a question back, not an answer."""
    return normalise(text).rstrip(" .!\"')»”’").endswith("?")


# --- the steps ----------------------------------------------------------------------------


def _read(
    reply: str, options: Sequence[Option], recommendation: str | None, *, loose: bool
) -> _Read:
    text = normalise(reply)
    if not text:
        return _FREE
    choices = [_option(i, o) for i, o in enumerate(options)]
    exact = [c for c in choices if c.label == text]
    if exact:
        return _Read(tuple(exact), "label")
    if asks_back(text) or NO_EMOJI & set(text):
        return _FREE  # a question back; a 👎 or ❌ beside an option (on its own, it rejects)
    read = _by_index(reply, text, choices) or _by_name(text, choices)
    read = read or _by_head(reply, choices, loose=loose)
    if read is not None:
        return read
    if _DELEGATION.fullmatch(text):
        return _Read(tuple(_by_recommendation(recommendation, choices)), "recommendation")
    bare = text.rstrip(_ENDINGS)  # "STOP!", "skip 👍": the name, an ending set aside
    named = _named_by(bare, choices) if bare and bare != text else None
    if named is not None:
        return _Read(tuple(named[0]), named[1])
    return _Read(tuple(_by_typo(text, choices)), "fuzzy")


def _by_index(reply: str, text: str, choices: list[_Option]) -> _Read | None:
    """Step 1: an index alone (quoted, bracketed, with a ``!`` or a 👍 beside it), or an
    index, a separator and words."""
    decorated = re.fullmatch(_DECORATED_INDEX, text)
    if decorated is not None:
        text = decorated["index"]
    alone = _INDEX.fullmatch(text)
    if alone is not None:
        core = text.rstrip(").:")
        chosen = _indexed(alone["letter"], alone["number"], choices)
        if chosen is not None:
            return _Read((chosen,), "letter" if alone["letter"] else "number")
        return _FREE if len(core) == 1 else None  # a single character is only an index
    if len(text) == 1 and text.isalnum():
        return _FREE
    match = _INDEXED.fullmatch(unicodedata.normalize("NFKC", reply).strip())
    if match is None:
        return None
    head = match["index"].casefold()
    letter, number = (head, None) if head.isalpha() else (None, head)
    chosen = _indexed(letter, number, choices)
    if chosen is None:
        return _FREE if _index_of(letter, number) < len(choices) else None
    return _with_words(chosen, "letter" if letter else "number", match["words"], choices)


def _indexed(letter: str | None, number: str | None, choices: list[_Option]) -> _Option | None:
    """The option an index names, unless it could as well name another by its label."""
    position = _index_of(letter, number)
    if not 0 <= position < len(choices):
        return None
    if number is not None and any(numbers_in(c.label) for c in choices):
        # Where labels hold numbers, a number is an index only when it is that option's
        # number too ("5" on "Option 1 … Option 5"): "2" on "2 nodes / 4 nodes" is not.
        holding = [c for c in choices if str(position + 1) in numbers_in(c.label)]
        if [c.index for c in holding] != [position]:
            return None
    if letter is not None and any(letter in c.letters for c in choices if c.index != position):
        return None  # "A" on "Plan B / Plan A"
    return choices[position]


def _index_of(letter: str | None, number: str | None) -> int:
    if letter is not None:
        return string.ascii_lowercase.index(letter)
    return int(number or 0) - 1


def _by_name(text: str, choices: list[_Option]) -> _Read | None:
    """Steps 3 and 4 for the whole reply (step 2, the exact label, comes first)."""
    found = _named_by(text, choices)
    return _Read(tuple(found[0]), found[1]) if found else None


def _named_by(key: str, choices: list[_Option]) -> tuple[list[_Option], MatchedBy] | None:
    exact = [c for c in choices if c.label == key]
    if exact:
        return exact, "label"
    prefixed = [c for c in choices if _is_prefix(key, c.label)]
    if prefixed:
        return prefixed, "prefix"
    by_value = [c for c in choices if c.value_key == key]
    if by_value:
        return by_value, "value"
    by_alias = [c for c in choices if key in c.aliases]
    if by_alias:
        return by_alias, "alias"
    return None


def _is_prefix(key: str, label: str) -> bool:
    """``key`` starts ``label``: 2+ characters, not cut inside a number, and a negation word
    only where the label has that word (``no`` does not start "Now")."""
    if len(key) < _MIN_PREFIX or key == label or not label.startswith(key):
        return False
    if key[-1].isdigit() and label[len(key)].isdigit():
        return False
    if key[-1].isalpha() and label[len(key)].isalpha():
        # The reply ends inside a word of the label: an English word that is not that word
        # is meant as it is ("ski" is no start of "Skip the task", nor "rest" of "Restart").
        part, word = words_of(key)[-1], words_of(label)[len(words_of(key)) - 1]
        if is_word(part) and not inflected(part, word):
            return False
    last = words_of(key)[-1:] or [""]
    whole = words_of(label)[len(words_of(key)) - 1 : len(words_of(key))]
    return not (negations(last) and last != whole)


def _by_head(reply: str, choices: list[_Option], *, loose: bool) -> _Read | None:
    """A label, unique prefix, value or alias, then a separator and words (``loose``: a
    plain space will do after a label or value). The longest such head wins."""
    display = unicodedata.normalize("NFKC", reply).strip()
    longest = max((len(t) for c in choices for t in c.texts), default=0)
    for head, words, plain in _splits(display, loose=loose):
        if len(head) > 2 * longest + 10:
            continue  # far longer than any label, value or alias: it names none
        found = _named_by(normalise(head), choices)
        if found is None or len({c.value for c in found[0]}) != 1:
            continue
        options, matched_by = found
        if plain and matched_by not in ("label", "value"):
            continue
        return _with_words(options[0], matched_by, words, choices)
    return None


def _splits(display: str, *, loose: bool) -> Iterator[tuple[str, str, bool]]:
    """(head, words, cut at a plain space) at every separator, the longest head first."""
    cuts = {(m.start(), m.end()): False for m in _SEPARATOR.finditer(display)}
    if loose:
        for m in re.finditer(r"\s+", display):
            cuts.setdefault((m.start(), m.end()), True)
    for (start, end), plain in sorted(cuts.items(), reverse=True):
        head, words = display[:start].strip(), display[end:].strip()
        if len(head) >= _MIN_PREFIX and words:
            yield head, words, plain


def _with_words(
    chosen: _Option, matched_by: MatchedBy, words: str, choices: list[_Option]
) -> _Read:
    """The option with the words as its note — or free text when the words name another
    option, or negate this one."""
    note = " ".join(words.split())
    named, negated = _names(note, choices)
    if named - {chosen.index}:
        return _FREE  # "A - stay on v1": the letter and the words disagree
    if chosen.index in negated:
        return _FREE  # "A - don't use the v2 API"
    if _takes_back(note, chosen, choices):
        return _FREE  # "Postgres — no", "A — scratch that", "yes, but only for staff"
    return _Read((chosen,), matched_by, note)


def _takes_back(words: str, chosen: _Option, choices: list[_Option]) -> bool:
    """Whether the words after ``chosen`` take it back or make it no choice yet (SPEC §28):
    second thoughts anywhere (``scratch that``, ``never mind``, ``wait``, ``actually``,
    ``or``); a contrast, condition or alternative (``but``, ``only``, ``if``, ``instead``);
    a negation that ends them (``I guess not``) or opens them aimed at no other option
    (``no``, ``NOT``, ``no, 7``; not
    ``not postgres`` after MySQL, nor ``no phone at hand``: a reason) unless the option
    itself says no (``no, not yet``); after an option that says yes, any negation or word
    that says nothing (``yes, not now``, ``allow nothing``); words that only say nothing
    (``A: false``) or, where the options are numbers, only another number (``B — 7``). A
    word of the option's own
    (``B, wait until Monday`` for *Wait*) is never one of these."""
    key = normalise(words)
    own = chosen.words
    tokens = [t for t in words_of(key) if t not in own]
    if not tokens:
        return False
    if any(t in QUALIFIERS for t in tokens) or set(tokens) <= ALONE_TAKE_BACK:
        return True
    if any(paused or not set(words_of(phrase)) <= own for phrase, paused in taken_back(key)):
        return True  # "A — scratch that"; "Wait - wait, the other one" (its own word, a pause)
    if all(t in NOTHING or negations([t]) for t in tokens):
        return True  # "A: nothing", "deploy now - false"
    if all(t.isdigit() for t in tokens) and any(numbers_in(c.label) for c in choices):
        return True  # "B — 7" where the options are numbers: another number, not a note
    says = [*words_of(chosen.label)[:1], chosen.value_key]
    if any(w in _SAYS_NO for w in says) or negations(words_of(chosen.label)):
        return False  # a negation after a no agrees with it
    if any(w in _SAYS_YES for w in says) and (negations(tokens) or NOTHING & set(tokens)):
        return True
    spans = list(WORD.finditer(key))
    everything = [m.group() for m in spans]
    if negations(everything[-1:]):
        return True  # a negation that ends them: "I guess not", "hmm, no", "A, don't"
    opening = 2 if everything[:2] == ["do", "not"] else 1
    if not negations(everything[:opening]):
        return False
    rest = everything[opening:]
    # Denying the next word, not the choice: nothing but a space between them.
    joined = bool(rest) and not key[spans[opening - 1].end() : spans[opening].start()].strip()
    if joined and _foreign(rest[:1], chosen, choices):
        return False  # "not postgres", "no retry please": the other option is what is denied
    # "no" before a reason of three words or more is a determiner ("no phone at hand"); not
    # before an order or a change of mind ("no let's keep going", "no I want the other").
    reason = joined and everything[0] == "no" and len(rest) >= 3
    return not (reason and not _ORDERS & set(rest))


def _names(words: str, choices: list[_Option]) -> tuple[set[int], set[int]]:
    """The options ``words`` name, and those they name only to negate (``PostgreSQL, no
    MySQL``). An option is named by its label anywhere in them; by its value or an alias when
    that is the whole of them, a phrase of several words, or one word in words with a
    negation or second thoughts (``no wait, retry``; never ``the tests pass``); by a unique
    prefix of its label; by its letter."""
    key = normalise(words)
    bare = key.rstrip(" .!")
    spans = list(WORD.finditer(key))
    tokens = [m.group() for m in spans]
    wary = TURN.search(key) is not None or bool(negations(tokens))
    named: set[int] = set()
    negated: set[int] = set()
    for c in choices:
        if bare in c.texts:
            named.add(c.index)
        phrases = [c.label]
        phrases += [t for t in (c.value_key, *c.aliases) if wary or len(words_of(t)) > 1]
        for phrase in phrases:
            for at in _occurrences(tokens, words_of(phrase)):
                (negated if negated_at(key, spans, at) else named).add(c.index)
    prefixed = [c for c in choices if _is_prefix(bare, c.label)]
    if len(prefixed) == 1:
        named.add(prefixed[0].index)
    leading = _LEADING_INDEX.match(key)
    if leading is not None:
        position = _index_of(leading["letter"], leading["number"])
        if 0 <= position < len(choices):
            named.add(position)
    for lone in _LONE_INDEX.finditer(words):
        if lone["number"] is not None and not (wary or lone["end"] is not None):
            continue
        letter = lone["letter"].lower() if lone["letter"] else None
        position = _index_of(letter, lone["number"])
        if 0 <= position < len(choices):
            named.add(position)
    return named, negated


def _occurrences(tokens: Sequence[str], phrase: Sequence[str]) -> Iterator[int]:
    """Where ``phrase`` starts in ``tokens``."""
    size = len(phrase)
    for at in range(len(tokens) - size + 1 if size else 0):
        if list(tokens[at : at + size]) == list(phrase):
            yield at


def _by_recommendation(recommendation: str | None, choices: list[_Option]) -> list[_Option]:
    if recommendation is None:
        return []
    wanted = normalise(recommendation)
    return [c for c in choices if c.value_key == wanted]


def _by_typo(text: str, choices: list[_Option]) -> list[_Option]:
    """Step 6: the one option whose label is within a few slips of ``text`` (an ending
    ``!``, ``.``, 👍 or ✅ aside) — a reply of 5 letters or more that holds the label's
    distinguishing word (:func:`_spelt_like`) — or nothing."""
    text = text.rstrip(_ENDINGS)
    if not text or not choices:
        return []
    if sum(char.isalnum() for char in text) < _MIN_TYPO_LETTERS:
        return []
    longest = max((len(t) for c in choices for t in c.texts), default=0)
    if len(text) > 2 * longest + 10:
        return []
    allowed = 1 if len(text) <= 10 else 2 if len(text) <= 20 else 3
    tokens = words_of(text)
    if len(tokens) == 1 and is_word(tokens[0]):
        return []  # an English word is meant as written: never a typo of what it resembles
    within, near = [], []
    for c in choices:
        if _foreign(tokens, c, choices):
            continue
        if _spelt_like(tokens, c, choices) and any(
            cost <= allowed for cost in _typo_costs(text, tokens, c, allowed)
        ):
            within.append(c)
        elif _but_for_numbers(text, c):
            near.append(c)
    # A reply as near to another option but for a number ("21 deploy" of "20 deploy" beside
    # "V21 deploy") is a typo of neither: both are returned, and an ambiguous read is free text.
    return within + near if within else []


def _but_for_numbers(text: str, c: _Option) -> bool:
    """Whether ``text`` is one of ``c``'s texts but for its digits ("21 deploy" of "20
    deploy"); a typo besides ("node18" of "Node 20", a space dropped too) is not."""
    masked = text.casefold().translate(_ONE_DIGIT)
    return any(
        len(target) >= _MIN_TYPO_TEXT and masked == target.casefold().translate(_ONE_DIGIT)
        for target in c.texts
    )


_ONE_DIGIT = str.maketrans("123456789", "000000000")


def _typo_costs(text: str, tokens: Sequence[str], c: _Option, allowed: int) -> Iterator[int]:
    """The slips from ``text`` to ``c``'s label, and to the starts of it that end on the
    reply's last letter (``postgress`` of "PostgreSQL", never ``skip tesk`` of "Skip
    tests"), that it may be a typo of: the same numbers, the same negations, a start never
    cut inside a number. Never of a value or an alias: those match exactly (SPEC §28)."""
    target = c.label
    if len(target) < _MIN_TYPO_TEXT:
        return
    row = slips(text, target)
    ends = [len(target)]
    ends += [
        end
        for end in range(_MIN_TYPO_PREFIX, len(target))
        if target[end - 1] == text[-1] and not (target[end - 1].isdigit() and target[end].isdigit())
    ]
    for end in ends:
        if row[end] <= allowed and _same_sense(text, tokens, target[:end]):
            yield row[end]


def _spelt_like(tokens: Sequence[str], c: _Option, choices: list[_Option]) -> bool:
    """Whether the reply may be a typo of ``c``'s label (SPEC §28): it holds the label's
    distinguishing word — a word no other option has — as it is, with an ending
    (``replica``), misspelt (``skp``, ``postgress``), run into a neighbour (``node18``) or
    split (``my sql``); and it changes no ordinary word into another: an English word that
    is none of the option's (``slip``, ``lop``) is meant as it is written."""
    others = {w for o in choices if o.value != c.value for w in o.words}
    label = [w for w in words_of(c.label) if w not in STOPWORDS] or words_of(c.label)
    distinct = [w for w in label if w not in others]
    # No word of its own ("2 deploy" beside "2 rollback" and "1 deploy"): all of its words.
    keys, needed = (distinct, 1) if distinct else (label, len(set(label)))
    own = c.words
    found: set[str] = set()
    split = set()
    for at in range(len(tokens) - 1):
        if tokens[at] + tokens[at + 1] in keys:  # a space slipped in: "my sql"
            split |= {at, at + 1}
            found.add(tokens[at] + tokens[at + 1])
    words = words_of(c.label)
    # A space dropped: the token is two or more of the label's words run together ("node18"
    # of "Node 18", "v1deploy" of "V1 deploy") — never a word found inside another ("10" in
    # "v10rollback", "v1" in "v10").
    joined = {
        "".join(words[i:j]): set(words[i:j])
        for i in range(len(words))
        for j in range(i + 2, len(words) + 1)
    }
    for at, token in enumerate(tokens):
        if at in split:
            continue
        found |= {w for w in keys if w in joined.get(token, ())}
        if not token.isalpha() or any(inflected(token, w) for w in own):
            found |= {w for w in keys if inflected(token, w)}
            continue
        if token in STOPWORDS or is_word(token):
            return False
        last = at == len(tokens) - 1
        found |= {w for w in keys if _misspelt(token, w, start=last)}
    return len(found) >= needed


def _misspelt(token: str, word: str, *, start: bool) -> bool:
    """Whether ``token`` is a slip or two from ``word`` (one for a word of five letters or
    fewer) — or, ``start``, from the start of it (4 letters or more)."""
    allowed = 1 if len(word) <= 5 else 2
    row = slips(token, word)
    ends = range(_MIN_TYPO_PREFIX, len(word) + 1) if start else [len(word)]
    return any(row[end] <= allowed for end in ends if end < len(row))


def _same_sense(text: str, tokens: Sequence[str], target: str) -> bool:
    """A typo keeps the numbers and the negations of what it is a typo of."""
    theirs = words_of(target)
    if numbers_in(text) != numbers_in(target) or negations(tokens) != negations(theirs):
        return False
    return not negated_word(tokens, theirs)


def _foreign(tokens: Sequence[str], c: _Option, choices: list[_Option]) -> bool:
    """Whether the reply holds a word that tells another option from ``c``."""
    own = c.words
    others = {w for o in choices if o.value != c.value for w in o.words} - own - STOPWORDS
    for token in tokens:
        if token in others:
            return True
        if len(token) >= 4 and any(
            len(w) >= 4 and (w.startswith(token) or token.startswith(w)) for w in others
        ):
            return True
    return False


def _yes_or_no(reply: str) -> tuple[str, str | None] | None:
    """An approval's yes or no word, alone or before a separator and words; a negated
    approval rejects. Words after a yes must leave it unconditional."""
    key = normalise(reply).rstrip(" .!")
    if _NEGATED_APPROVAL.fullmatch(key):
        return "rejected", None
    # Alone, but for punctuation, 👍 or ✅ (never a "?": a question back is no answer).
    bare, thumbs = _bare(reply) if "?" not in key else (key, False)
    if (bare and set(bare.split()) <= YES_WORDS) or (thumbs and not bare):
        return "approved", None
    if bare in NO_WORDS:
        return "rejected", None
    display = unicodedata.normalize("NFKC", reply).strip()
    match = _SEPARATOR.search(display)
    if match is None or not display[match.end() :].strip():
        return None
    head = normalise(display[: match.start()])
    words = " ".join(display[match.end() :].split())
    if _names(words, [_option(i, o) for i, o in enumerate(_YES_NO)])[0]:
        return None  # "no, approve it": both
    if head in YES_WORDS and unconditional(words):
        return "approved", words
    if head in NO_WORDS:
        return "rejected", words
    return None


_YES_NO = (Option("Approve", "approved"), Option("Reject", "rejected"))


def _option(index: int, option: Option) -> _Option:
    # An option without a value (a hand-written record) decides by its label, never "None".
    value = option.value if option.value is not None else option.label
    label = unicodedata.normalize("NFKC", option.label)
    words = WORD.findall(label)
    letters = frozenset(
        w.casefold() for w in words[1:] if len(w) == 1 and w.isascii() and w.isupper()
    )
    return _Option(
        index=index,
        value=value,
        label=normalise(option.label),
        value_key=normalise(value),
        aliases=tuple(a for a in (normalise(a) for a in option.aliases) if a),
        letters=letters,
    )


def _decide(reply: str, read: _Read) -> Decision:
    """One option (or several sharing one value) is a choice; none or a real tie is free text."""
    if read.found and len({c.value for c in read.found}) == 1:
        value = read.found[0].value
        return Decision(value, None, value, read.matched_by, read.note)
    return Decision(None, reply, " ".join(reply.split()), "free_text")
