"""Whether a word is an ordinary English word (SPEC §28: fuzzy matching corrects typos of
labels, never of ordinary words — ``quite`` is not a slip of ``quit``, nor ``slip`` of
``skip``).

The words are shipped in the package, ``english.txt.gz``: the 65,000 lower-case words of
SCOWL's size-50 American and British lists (the ones Debian's ``wamerican`` and ``wbritish``
install as ``/usr/share/dict/words``; how it was made and the lists' permissive notices are
in ``english.COPYRIGHT``). Shipped, not looked up: no library loopkit depends on carries a
word list, and ``/usr/share/dict`` is missing on a fresh machine or a slim container — where
reading replies must not change. Size 50 is the spell checkers' everyday dictionary: the larger
ones add rare and archaic words, which a reply holds far more often as a typo than as meant
(they would stop real typos from being corrected).

Loaded on first use (about 10 ms), only by replies that get as far as a fuzzy match or a
partial word; pure otherwise.
"""

from __future__ import annotations

import functools
import os
import zlib

_LIST = os.path.join(os.path.dirname(__file__), "english.txt.gz")
_GZIP = 16 + zlib.MAX_WBITS  # zlib reads the gzip format itself: no gzip module to import


@functools.cache
def _words() -> frozenset[str]:
    with open(_LIST, "rb") as file:
        return frozenset(zlib.decompress(file.read(), _GZIP).decode("ascii").split())


def is_word(token: str) -> bool:
    """Whether ``token`` (casefolded) is an English word of two letters or more."""
    return token in _words()


def inflected(one: str, other: str) -> bool:
    """Whether ``one`` and ``other`` are one word, but for an ending: ``replica`` and
    ``replicas``, ``deploy`` and ``deployed``, ``test`` and ``testing``."""
    short, long = sorted((one, other), key=len)
    return long.startswith(short) and long[len(short) :] in _ENDINGS


_ENDINGS = frozenset({"", "s", "es", "d", "ed", "ing", "ment", "ments"})
