"""What a reply's words say, for :mod:`~loopkit.requests.replies`: the text as compared
(NFKC + casefold, whitespace collapsed), its words and numbers, its negations (``not``,
``no``, ``don't``, ``never``, ``without``, ``instead of``, ``rather than``, and ``un-``,
``dis-``, ``non-`` before a word: ``unapproved``), its second thoughts (``no wait``, ``actually``,
``or``), and what takes a choice back or makes it conditional (SPEC §28: ``scratch that``,
``never mind``; ``but``, ``only``, ``if``, ``instead``). Pure.
"""

from __future__ import annotations

import re
import unicodedata

from loopkit.requests.typos import slips

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Second thoughts: after one, a single word that is another option's value or alias names it
# ("abort, no wait, retry"); without one it is just a word ("C, no retry please").
TURN = re.compile(
    r"\b(?:wait|actually|or|i mean|sorry|scratch that|make (?:it|that)|rather|instead)\b"
    r"|\bno\s*[,.;:!—–-]"
)
# What takes back what was said before it (SPEC §28): "A — scratch that", "stop, never mind",
# "C, actually let it run", "B, sorry, I mean A", "make it 7". Wherever it stands in the words.
# A pattern, compiled on first use (by re's cache), not at import: SPEC §20.
_TAKEN_BACK = (
    r"\b(?:wait|hold on|hang on|actually|i mean|i meant|sorry|scratch (?:that|it|this)"
    r"|strike (?:that|it|this)|never ?mind|nvm|make (?:it|that)|correction|oops|undo"
    r"|ignore (?:that|it|this)|forget (?:that|it|this)|cancel (?:that|it|this)|jk"
    r"|just kidding|(?:on )?second thoughts?|rather|instead|or|change(?:d)? my mind"
    r"|change of plans?|my (?:bad|mistake)|wrong (?:one|option|button|choice)|misclick(?:ed)?"
    r"|the other (?:one|option|choice)|the other|another (?:one|option|choice)"
    r"|something else|anything else|disregard|retract|revoke|hm+|um+|uh+|erm)\b"
)
# A note of nothing but one of these takes the choice back too ("A - cancel", "B: undo").
ALONE_TAKE_BACK = frozenset({
    "cancel", "undo", "stop", "abort", "ignore", "nevermind", "nvm", "oops", "sorry", "nope",
    "nah", "no", "not", "never", "false", "wrong", "mistake", "typo",
})  # fmt: skip
# Emoji that say no: in a reply they are a negation, never decoration.
NO_EMOJI = frozenset("👎❌🚫✖⛔🛑✗✘🙅")
# A contrast, a condition or an alternative: a choice with one of these is no choice yet
# ("yes, but only for staff", "A, if the tests pass", "B, except staging").
QUALIFIERS = frozenset({
    "but", "except", "excepting", "only", "if", "unless", "rather", "instead", "however",
    "though", "although", "otherwise", "alternatively", "provided", "providing", "assuming",
})  # fmt: skip
# Words that say "nothing" or "false" where a yes stands: "approve nothing", "approve: false".
NOTHING = frozenset({"nothing", "none", "nobody", "false", "0", "zero", "null", "nil", "off"})
_NEGATIONS = {
    "no": "not", "not": "not", "nope": "not", "nah": "not", "neither": "not", "nor": "not",
    "non": "not", "cannot": "not", "never": "never", "without": "without",
}  # fmt: skip
_NOT_CONTRACTED = frozenset({
    "dont", "doesnt", "didnt", "isnt", "wont", "cant", "shouldnt", "wouldnt", "couldnt",
    "arent", "wasnt", "werent", "havent", "hasnt", "aint", "mustnt",
})  # fmt: skip
_NEGATING_PREFIXES = ("un", "dis", "non")
# Too common to tell one option from another ("the" in "Skip the task" and "Abort the loop").
STOPWORDS = frozenset({
    "a", "an", "the", "to", "of", "on", "in", "at", "for", "with", "and", "or", "it", "its",
    "is", "be", "this", "that", "my", "your", "our", "i", "we", "you", "me", "us", "by", "as",
    "from", "do",
})  # fmt: skip


def normalise(text: str) -> str:
    """NFKC + casefold (and NFKC again: casefold can un-normalise), whitespace runs
    collapsed, a typographic apostrophe made plain."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.replace("’", "'").split())


def words_of(text: str) -> list[str]:
    return WORD.findall(text)


def numbers_in(text: str) -> list[str]:
    return sorted(re.findall(r"[0-9]+", text))


def taken_back(key: str) -> list[tuple[str, bool]]:
    """The phrases in the words (as :func:`normalise` gives them) that take back what was
    said before them, each with whether a pause follows it (``wait,``: an interjection)."""
    return [
        (m.group(), re.match(r"\s*[,.;:!—–-]", key[m.end() :]) is not None)
        for m in re.finditer(_TAKEN_BACK, key)
    ]


def negations(tokens: Sequence[str]) -> frozenset[str]:
    """The kinds of negation in ``tokens``: not (no, not, don't, …), never, without,
    instead (of), rather (than)."""
    found = set()
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in _NEGATIONS:
            found.add(_NEGATIONS[token])
        elif token.endswith("n't") or token in _NOT_CONTRACTED:
            found.add("not")
        elif (token, following) in (("instead", "of"), ("rather", "than")):
            found.add(token)
    return frozenset(found)


def negated_word(tokens: Sequence[str], theirs: Sequence[str]) -> bool:
    """``un-``/``dis-``/``non-`` before one of ``theirs`` (``unapproved``, ``disapprove``)."""
    for token in tokens:
        if token in theirs:
            continue
        for prefix in _NEGATING_PREFIXES:
            stem = token[len(prefix) :]
            if not token.startswith(prefix) or not stem:
                continue
            for word in theirs:
                if stem == word or (
                    min(len(stem), len(word)) >= 3
                    and (
                        stem.startswith(word) or word.startswith(stem) or slips(stem, word)[-1] <= 1
                    )
                ):
                    return True
    return False


def negated_at(key: str, spans: Sequence[re.Match[str]], at: int) -> bool:
    """Whether the word at ``at`` comes right after a negation, nothing but spaces between
    (``no retry``, ``don't``, ``do not``, ``instead of``, ``rather than``; ``no, retry`` is
    second thoughts, not a negation)."""

    def joined(first: int) -> bool:
        return all(not key[spans[i].end() : spans[i + 1].start()].strip() for i in range(first, at))

    before = tuple(m.group() for m in spans[max(0, at - 2) : at])
    if before[-1:] and negations(before[-1:]) and joined(at - 1):
        return True
    return before in (("instead", "of"), ("rather", "than")) and joined(at - 2)
