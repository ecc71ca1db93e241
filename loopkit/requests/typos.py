"""How many slips of the finger turn a reply into an option's text: the measure behind
fuzzy matching (SPEC section 16: fuzzy matching corrects typos, never meaning).

A slip is a key pressed once too often or missed (an insertion, a deletion), two keys
swapped (a transposition), or a neighbouring key hit instead of the right one on a QWERTY
keyboard (a substitution). Any other substitution costs two: it is another letter, not a
slip — ``mssql`` is two from ``mysql`` (``s`` and ``y`` are far apart), ``abrot`` one from
``abort``, and ``cafe`` two from ``café``. Pure; the texts are compared as given.
"""

from __future__ import annotations

import functools

_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")


@functools.cache
def _neighbours() -> dict[str, frozenset[str]]:
    """Each key's neighbours: left and right, and the two above and below (rows staggered)."""
    near: dict[str, frozenset[str]] = {}
    for r, row in enumerate(_ROWS):
        for c, key in enumerate(row):
            around = (
                (r, c - 1),
                (r, c + 1),
                (r - 1, c),
                (r - 1, c + 1),
                (r + 1, c - 1),
                (r + 1, c),
            )
            near[key] = frozenset(
                _ROWS[rr][cc]
                for rr, cc in around
                if 0 <= rr < len(_ROWS) and 0 <= cc < len(_ROWS[rr])
            )
    return near


def _substitution(typed: str, meant: str) -> int:
    if typed == meant:
        return 0
    return 1 if meant in _neighbours().get(typed, frozenset()) else 2


def slips(text: str, target: str) -> list[int]:
    """The slips from ``text`` to each start of ``target``: item ``j`` is the count for
    ``target[:j]`` (so the last item is the whole of it). An optimal-string-alignment
    distance: insertions, deletions and transpositions cost one, substitutions as above."""
    before: list[int] = []
    previous = list(range(len(target) + 1))
    for i in range(1, len(text) + 1):
        current = [i] + [0] * len(target)
        for j in range(1, len(target) + 1):
            best = min(
                previous[j] + 1,
                current[j - 1] + 1,
                previous[j - 1] + _substitution(text[i - 1], target[j - 1]),
            )
            if (
                i > 1
                and j > 1
                and text[i - 1] == target[j - 2]
                and text[i - 2] == target[j - 1]
                and text[i - 1] != target[j - 1]
            ):
                best = min(best, before[j - 2] + 1)
            current[j] = best
        before, previous = previous, current
    return previous
