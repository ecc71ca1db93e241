"""The shell's tokens of a command string, as ``/bin/sh`` reads them: words (their quotes
removed, and whether they held an expansion or were an assignment) and operators.
:mod:`~loopkit.config.programs` follows what certainly runs, :mod:`~loopkit.config.mayrun`
every program that may; both read a string through :func:`tokens`.

It reads what it can be sure of and raises :class:`GiveUp` on the rest: an open quote, a
here-document (its body is not commands), an unbalanced ``$(``.
"""

from __future__ import annotations

from loopkit.datarecord import record


class GiveUp(Exception):
    """What follows cannot be known without running it: stop, report nothing more."""


@record(frozen=True, slots=True)
class Token:
    kind: str  # "word", "op" (an operator, or "\n"), "io" (the 2 of 2>file)
    text: str  # a word with its quotes removed
    quoted: bool = False  # a word with any quoting: never a reserved word
    dynamic: bool = False  # a word with an expansion or a glob: its value is not known
    assigns: bool = False  # NAME=… with NAME unquoted: an assignment before a command


_OPERATORS = ("&&", "||", ";;", "<<", ">>", "<&", ">&", "<>", ">|", "|&",
              ";", "&", "|", "(", ")", "<", ">")  # fmt: skip
REDIRECTIONS = frozenset(("<", ">", ">>", "<&", ">&", "<>", ">|"))
_META = " \t\n;&|()<>"


def tokens(text: str) -> list[Token]:
    """The shell's tokens of ``text``; raises GiveUp on what it does not read (an open
    quote, a here-document, an unbalanced ``$(``)."""
    found: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t":
            i += 1
        elif c == "\\" and text.startswith("\\\n", i):
            i += 2
        elif c == "\n":
            found.append(Token("op", "\n"))
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c in ";&|()<>":
            op = next(o for o in _OPERATORS if text.startswith(o, i))
            if op == "<<":
                raise GiveUp  # a here-document: its body is not commands
            found.append(Token("op", op))
            i += len(op)
        else:
            word, i = _word(text, i)
            if i < n and text[i] in "<>" and not word.quoted and word.text.isdigit():
                word = Token("io", word.text)
            found.append(word)
    return found


def _word(text: str, i: int) -> tuple[Token, int]:
    out: list[str] = []
    quoted = dynamic = assigns = False
    n = len(text)
    if text[i] == "~":
        dynamic = True  # tilde expansion
    while i < n and text[i] not in _META:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                i += 2
                continue
            quoted = True
            out.append(text[i + 1 : i + 2])
            i += 2
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise GiveUp
            out.append(text[i + 1 : end])
            quoted, i = True, end + 1
        elif c == '"':
            inner, i, expands = _double_quoted(text, i + 1)
            out.append(inner)
            quoted, dynamic = True, dynamic or expands
        elif c == "$" or c == "`":
            i = _expansion(text, i)
            dynamic = True
        else:
            if c in "*?" or (c == "[" and "]" in text[i : _word_end(text, i)]):
                dynamic = True  # pathname expansion
            if c == "=" and not (quoted or dynamic or assigns) and "".join(out).isidentifier():
                assigns = True
            out.append(c)
            i += 1
    return Token("word", "".join(out), quoted, dynamic, assigns), i


def _word_end(text: str, i: int) -> int:
    while i < len(text) and text[i] not in _META:
        i += 1
    return i


def _double_quoted(text: str, i: int) -> tuple[str, int, bool]:
    """From just past an opening ``"``: its text, the index past the closing one, and
    whether it holds an expansion."""
    out: list[str] = []
    expands = False
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1, expands
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(nxt if nxt in '$`"\\' else c + nxt if nxt != "\n" else "")
            i += 2
        elif c in "$`":
            i = _expansion(text, i)
            expands = True
        else:
            out.append(c)
            i += 1
    raise GiveUp


def _expansion(text: str, i: int) -> int:
    """The index past the expansion at ``i`` (``$name``, ``${…}``, ``$(…)``, ``$((…))``,
    `` `…` ``)."""
    n = len(text)
    if text[i] == "`":
        j = i + 1
        while j < n and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        if j >= n:
            raise GiveUp
        return j + 1
    if i + 1 >= n:
        return i + 1
    nxt = text[i + 1]
    if nxt in "({":
        return _balanced(text, i + 1, nxt, ")" if nxt == "(" else "}")
    if nxt.isalnum() or nxt == "_":
        j = i + 1
        while j < n and (text[j].isalnum() or text[j] == "_"):
            j += 1
        return j
    return i + 2 if nxt in "@*#?-$!" else i + 1


def _balanced(text: str, i: int, opening: str, closing: str) -> int:
    """The index past the ``closing`` that balances the ``opening`` at ``i``, quotes and
    nested expansions skipped."""
    depth, j, n = 0, i, len(text)
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":
            end = text.find("'", j + 1)
            if end < 0:
                raise GiveUp
            j = end + 1
            continue
        if c == '"':
            j = _double_quoted(text, j + 1)[1]
            continue
        if c == "`" or (c == "$" and j + 1 < n and text[j + 1] in "({"):
            j = _expansion(text, j)
            continue
        if c == opening:
            depth += 1
        elif c == closing:
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise GiveUp
