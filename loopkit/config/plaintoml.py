"""The plain TOML a ``loopkit.toml`` is written in, read without :mod:`tomllib`.

``import tomllib`` compiles its regular expressions and imports ``typing``: about 40 M
instructions, ~8 ms of every command that reads the config on this kind of machine, more than
any command's own work (SPEC §20; ``python -X importtime -c 'import tomllib'``). A
``loopkit.toml`` uses a small part of TOML: ``[table]`` headers, ``key = value`` lines with
bare keys, and values that are basic or literal strings, decimal integers, booleans or
one-line arrays of those; comments anywhere a line allows. ``[[name]]`` arrays of tables too
(``.loopkit/allow.toml``'s rules, read by the gate's hook).

:func:`loads` reads exactly that part and answers None for anything else — a multi-line
string or array, a float, a date, a dotted or quoted key, an inline table, a duplicate, a
control character, any syntax error — so the caller hands the text to :mod:`tomllib`, whose
answer (or error message) is then the one given. Whatever :func:`loads` does answer equals
``tomllib.loads`` on the same text (tests/config/test_plaintoml.py holds it to that).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = frozenset("0123456789")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_SPACE = " \t"


class _Unplain(Exception):
    """Outside the plain part: :mod:`tomllib` reads this text."""


def loads(text: str) -> dict[str, Any] | None:
    """``text`` parsed as :func:`tomllib.loads` would, or None when it is not plain TOML."""
    for ch in text:  # control characters: tomllib's to accept or refuse
        if (ch < " " and ch not in "\t\n") or ch == "\x7f":
            return None
    doc: dict[str, Any] = {}
    table = doc
    arrays: set[str] = set()  # the names [[name]] made: arrays of tables
    try:
        for line in text.split("\n"):
            rest = line.lstrip(_SPACE)
            if not rest or rest[0] == "#":
                continue
            if rest.startswith("[["):
                table = _array_table(doc, rest, arrays)
                continue
            if rest[0] == "[":
                table = _header(doc, rest)
                continue
            key, rest = _key(rest)
            if key in table:
                return None
            table[key], rest = _value(rest)
            _end(rest)
    except (_Unplain, ValueError):  # ValueError: an integer too long for int(): tomllib's
        return None
    return doc


def _header(doc: dict[str, Any], rest: str) -> dict[str, Any]:
    close = rest.find("]")
    name = rest[1:close]
    if close < 0 or not name or not _BARE.issuperset(name) or name in doc:
        raise _Unplain
    _end(rest[close + 1 :])
    table: dict[str, Any] = {}
    doc[name] = table
    return table


def _array_table(doc: dict[str, Any], rest: str, arrays: set[str]) -> dict[str, Any]:
    """``[[name]]``: a new table at the end of the array of tables ``name`` (``.loopkit/
    allow.toml``'s ``[[allow]]``)."""
    close = rest.find("]]")
    name = rest[2:close]
    if close < 0 or not name or not _BARE.issuperset(name):
        raise _Unplain
    if name in doc and name not in arrays:
        raise _Unplain  # a table or a value of that name: tomllib's error to give
    _end(rest[close + 2 :])
    arrays.add(name)
    table: dict[str, Any] = {}
    doc.setdefault(name, []).append(table)
    return table


def _key(rest: str) -> tuple[str, str]:
    i = 0
    while i < len(rest) and rest[i] in _BARE:
        i += 1
    key, after = rest[:i], rest[i:].lstrip(_SPACE)
    if not key or not after.startswith("="):
        raise _Unplain
    return key, after[1:].lstrip(_SPACE)


def _end(rest: str) -> None:
    """Nothing but blanks and a comment may follow."""
    rest = rest.lstrip(_SPACE)
    if rest and rest[0] != "#":
        raise _Unplain


def _value(rest: str) -> tuple[object, str]:
    if rest.startswith('"'):
        return _basic(rest)
    if rest.startswith("'"):
        close = rest.find("'", 1)
        if close < 0 or rest.startswith("'''"):
            raise _Unplain
        return rest[1:close], rest[close + 1 :]
    if rest.startswith("["):
        return _array(rest)
    end = 0
    while end < len(rest) and rest[end] not in " \t#,]":
        end += 1
    word, after = rest[:end], rest[end:]
    if word == "true":
        return True, after
    if word == "false":
        return False, after
    digits = word[1:] if word[:1] in "+-" else word
    if digits and _DIGITS.issuperset(digits) and (digits == "0" or digits[0] != "0"):
        return int(word), after
    raise _Unplain


def _basic(rest: str) -> tuple[str, str]:
    if rest.startswith('"""'):
        raise _Unplain
    out: list[str] = []
    i = 1
    while i < len(rest):
        ch = rest[i]
        if ch == '"':
            return "".join(out), rest[i + 1 :]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        code = rest[i + 1 : i + 2]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
        elif code in ("u", "U"):
            width = 4 if code == "u" else 8
            digits = rest[i + 2 : i + 2 + width]
            if len(digits) != width or not frozenset("0123456789abcdefABCDEF").issuperset(digits):
                raise _Unplain
            point = int(digits, 16)
            if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
                raise _Unplain
            out.append(chr(point))
            i += 2 + width
        else:
            raise _Unplain
    raise _Unplain  # no closing quote on this line


def _array(rest: str) -> tuple[list[object], str]:
    items: list[object] = []
    rest = rest[1:].lstrip(_SPACE)
    while not rest.startswith("]"):
        if not rest or rest[0] in ",#[":
            raise _Unplain  # empty item, the array goes on past this line, or nested
        item, rest = _value(rest)
        items.append(item)
        rest = rest.lstrip(_SPACE)
        if rest.startswith(","):
            rest = rest[1:].lstrip(_SPACE)
        elif not rest.startswith("]"):
            raise _Unplain
    return items, rest[1:]
