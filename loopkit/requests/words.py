"""What a reply's words say, for :mod:`~loopkit.requests.replies`: the text as compared
(NFKC + casefold, whitespace collapsed), its words and numbers, its negations (``not``,
``no``, ``don't``, ``never``, ``without``, ``instead of``, ``rather than``, and ``un-``,
``dis-``, ``non-`` before a word: ``unapproved``) and its second thoughts (``no wait``,
``actually``, ``or``). Pure.
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
