"""Whether a word is an ordinary English word (SPEC §28: fuzzy matching corrects typos of
labels, never of ordinary words — ``quite`` is not a slip of ``quit``, nor ``slip`` of
``skip``).

The words are shipped in the package, ``english.txt``: the 65,000 lower-case words of
SCOWL's size-50 American and British lists (the ones Debian's ``wamerican`` and ``wbritish``
install as ``/usr/share/dict/words``; how it was made and the lists' permissive notices are
in ``english.COPYRIGHT``). Shipped, not looked up: no library loopkit depends on carries a
word list, and ``/usr/share/dict`` is missing on a fresh machine or a slim container — where
reading replies must not change. Size 50 is the spell checkers' everyday dictionary: the
larger ones add rare and archaic words, which a reply holds far more often as a typo than as
meant (they would stop real typos from being corrected).

Plain and sorted bytewise, so a word is found by bisection in the file's bytes as read
(600 kB, read once, on first use, by a reply that gets as far as a typo or a partial word):
no decompression, no set of 65,000 strings — a gzipped list cost 10–30 ms to load, which a
``loopkit reply`` would pay on its start-up (SPEC §20). Pure otherwise.
"""

from __future__ import annotations

import functools
import os

_LIST = os.path.join(os.path.dirname(__file__), "english.txt")


@functools.cache
def _words() -> bytes:
    with open(_LIST, "rb") as file:
        return file.read()  # one word a line, sorted bytewise, ending with a newline


def is_word(token: str) -> bool:
    """Whether ``token`` (casefolded) is an English word of two letters or more."""
    if not token.isascii() or not token.isalpha():
        return False
    words, key = _words(), token.encode("ascii")
    low, high = 0, len(words)  # both always at the start of a line
    while low < high:
        middle = (low + high) // 2
        start = words.rfind(b"\n", 0, middle) + 1
        end = words.index(b"\n", start)
        found = words[start:end]
        if found == key:
            return True
        if found < key:
            low = end + 1
        else:
            high = start
    return False


def inflected(one: str, other: str) -> bool:
    """Whether ``one`` and ``other`` are one word, but for a plural's ending: ``replica``
    and ``replicas``, ``box`` and ``boxes`` (not ``nod`` and ``nodes``). Only that:
    ``stag`` + ``ing`` is not ``staging``, ``rest`` + ``art`` not ``restart``."""
    short, long = sorted((one, other), key=len)
    if not long.startswith(short):
        return False
    ending = long[len(short) :]
    # "es" only where English spells a plural so: "nodes" is "node" + s, never "nod" + es.
    return ending in ("", "s") or (ending == "es" and short.endswith(_ES_PLURALS))


_ES_PLURALS = ("s", "x", "z", "ch", "sh", "o")  # box → boxes, match → matches, hero → heroes
