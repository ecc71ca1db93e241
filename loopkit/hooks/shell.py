"""Reading a command as the shell does, before the gate looks at it (SPEC section 28).

bash runs ``rm \\⏎ -rf data``, ``r''m -rf data``, ``"rm" -rf data`` and ``rm -rf data``
alike; a rule that searched the text as written saw four different commands. :func:`read`
does what bash does before it runs anything, and hands the gate the result:

- line continuations (backslash-newline) are joined; comments (``#`` at a word's start)
  dropped;
- the line is split into pipelines at ``;``, ``&``, ``&&``, ``||``, newlines, ``(``, ``)``
  and ``case``'s ``;;``, each into simple commands at ``|`` and ``|&``;
- each word loses its quotes and escapes (``'…'``, ``"…"``, ``$'…'`` with its escapes
  decoded, ``\\x``); ``~`` becomes ``$HOME``; a one-level brace list (``{rm,-rf,x}``) is
  expanded; a variable assigned earlier in the line, or one of :data:`FROM_ENV` set in this
  process's environment, is replaced by its value, and any other by nothing (as bash reads
  an unset one) — the word is then marked not :attr:`Word.known`; ``${X:-word}`` of an
  unknown one is ``word``;
- what runs inside a word — ``$(…)``, backquotes, ``<(…)``, ``>(…)``, and here-documents'
  substitutions — is read as commands of its own (:attr:`Word.subs`, and each pipeline of
  theirs in :attr:`Script.pipelines`);
- redirections are kept apart from the words (:attr:`Command.redirects`), here-document
  bodies with them.

What is not done: aliases, functions, arithmetic and pattern matching are not evaluated;
a glob stays a pattern (:attr:`Word.glob`). A command that is not valid shell is read as far
as bash would read it, an unclosed quote or substitution closed at the end.

The reading is bounded: :class:`Unreadable` when nesting is deeper than :data:`MAX_DEPTH`
or the ``deadline`` (a ``time.monotonic()`` value) passes — the hook then denies the call.
It imports nothing but ``os`` and ``time``: the hook's fast path reads a command with it.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

MAX_DEPTH = 48  # substitutions and scripts within scripts
_CHECK_EVERY = 512  # tokens between looks at the clock

_META = frozenset(" \t\n|&;()<>")
_SPECIAL = frozenset(" \t\n|&;()<>'\"\\$`")  # what ends a run of characters meaning themselves
_NAME_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_REST = _NAME_FIRST | frozenset("0123456789")
# Variables read from this process's environment (the agent's, as its hook runs): where
# things are. Any other that the line does not set is unknown, read as nothing.
FROM_ENV = frozenset(
    {"HOME", "PWD", "OLDPWD", "TMPDIR", "USER", "LOOPKIT_WORKSPACE", "CLAUDE_PROJECT_DIR",
     "CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME"}
)  # fmt: skip
_RESERVED = frozenset(
    {
        "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "case",
        "esac", "for", "select", "function", "coproc"
    }
)  # fmt: skip
# by their first character, longest first
_OPERATORS = {"|": ("||", "|&", "|"), "&": ("&&", "&"), ";": (";;&", ";;", ";&", ";"),
              "\n": ("\n",), "(": ("(",), ")": (")",)}  # fmt: skip
_REDIRECTS = {"<": ("<<<", "<<-", "<<", "<>", "<&", "<"), ">": (">>", ">|", ">&", ">"),
              "&": ("&>>", "&>")}  # fmt: skip
_DIGITS = frozenset("0123456789")
_ANSI = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
         "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


class Unreadable(Exception):
    """The command cannot be read in the time or depth allowed."""


class Word:
    """One word as the shell reads it: :attr:`text` after quote removal and expansion,
    :attr:`known` when nothing in it was an unknown variable or a substitution's output,
    :attr:`glob` when it holds an unquoted ``*``, ``?`` or ``[``, :attr:`subs` the
    commands that run inside it, :attr:`quoted` when any part of it was quoted."""

    __slots__ = ("glob", "known", "quoted", "subs", "text")

    def __init__(self) -> None:
        self.text = ""
        self.known = True
        self.glob = False
        self.quoted = False
        self.subs: list[Script] = []

    def __repr__(self) -> str:
        return f"Word({self.text!r})"


class Redirect:
    """``op`` (``>``, ``>>``, ``<<`` …), the fd it names, its target word or here-document."""

    __slots__ = ("body", "fd", "op", "target")

    def __init__(self, op: str, fd: str, target: Word | None) -> None:
        self.op = op
        self.fd = fd
        self.target = target
        self.body: str | None = None  # a here-document's text

    def __repr__(self) -> str:
        return f"Redirect({self.fd}{self.op}{self.target!r})"


class Command:
    """A simple command: its leading assignments, its words, its redirections."""

    __slots__ = ("assigns", "redirects", "words")

    def __init__(self) -> None:
        self.assigns: list[tuple[str, Word]] = []
        self.words: list[Word] = []
        self.redirects: list[Redirect] = []

    @property
    def argv(self) -> list[str]:
        return [word.text for word in self.words]

    def __repr__(self) -> str:
        return f"Command({self.argv!r}, {self.redirects!r})"


class Script:
    """Every pipeline of a command line — those inside its substitutions too, after the
    pipeline they are part of — each a list of simple commands."""

    __slots__ = ("pipelines",)

    def __init__(self) -> None:
        self.pipelines: list[list[Command]] = []

    def commands(self) -> Iterator[Command]:
        for pipeline in self.pipelines:
            yield from pipeline


class _Reader:
    def __init__(self, text: str, env: Mapping[str, str], deadline: float | None) -> None:
        self.text = text
        self.env = env
        self.deadline = deadline
        self.ticks = 0
        self.vars: dict[str, str | None] = {}  # assigned in the line; None: not known

    def tick(self) -> None:
        self.ticks += 1
        late = self.ticks % _CHECK_EVERY == 0 and self.deadline is not None
        if late and time.monotonic() > self.deadline:  # type: ignore[operator]
            raise Unreadable("the command could not be read in the time allowed")

    # --- the line -------------------------------------------------------------------------

    def script(self, pos: int, depth: int, close: str | None) -> tuple[Script, int]:
        """Read from ``pos`` to the end, or to an unquoted ``close`` (``)`` of a ``$(``)."""
        if depth > MAX_DEPTH:
            raise Unreadable(f"substitutions nested deeper than {MAX_DEPTH}")
        script = Script()
        nested: list[list[Command]] = []  # the pipelines of substitutions, after their own
        pipeline: list[Command] = []
        command = Command()
        pending: list[Redirect] = []  # here-documents whose bodies follow the next newline
        text, end = self.text, len(self.text)
        opened = 0  # ( … ) groups inside this script, for finding our own close

        def finish_command() -> None:
            nonlocal command
            if command.words or command.assigns or command.redirects:
                if not command.words:
                    for name, value in command.assigns:  # X=1 alone: set for what follows
                        self.vars[name] = value.text if value.known and not value.subs else None
                pipeline.append(command)
            command = Command()

        def finish_pipeline() -> None:
            nonlocal pipeline
            finish_command()
            if pipeline:
                script.pipelines.append(pipeline)
            script.pipelines.extend(nested)
            nested.clear()
            pipeline = []

        while pos < end:
            self.tick()
            c = text[pos]
            if c in " \t":
                while pos < end and text[pos] in " \t":
                    pos += 1
                continue
            if c == "\\" and text.startswith("\n", pos + 1):
                pos += 2
                continue
            if c == "#":
                newline = text.find("\n", pos)
                pos = end if newline < 0 else newline
                continue
            if close is not None and c == close and opened == 0:
                finish_pipeline()
                return script, pos + 1
            redirect = self.redirect_at(pos) if c in "<>&" or c in _DIGITS else None
            if redirect is not None:
                op, fd, pos = redirect
                pos = _skip_blanks(text, pos)
                target: Word | None = None
                if pos < end and text[pos] not in "\n|&;()<>":
                    target, pos = self.word(pos, depth, nested)
                found = Redirect(op, fd, target)
                command.redirects.append(found)
                if op in ("<<", "<<-") and target is not None:
                    pending.append(found)
                continue
            operator = next((o for o in _OPERATORS.get(c, ()) if text.startswith(o, pos)), None)
            if operator is not None:
                pos += len(operator)
                if operator in ("|", "|&"):
                    finish_command()
                elif operator == ")" and opened == 0:
                    finish_command()  # a stray ): as bash, an error; read on
                elif operator == "(" and not command.words:
                    if text.startswith("(", pos):  # (( arithmetic )): nothing runs
                        pos = _arithmetic_end(text, pos + 1)
                    else:
                        opened += 1
                        finish_command()
                elif operator == ")":
                    opened -= 1
                    finish_command()  # ( … ) | sh: the pipeline goes on
                else:
                    finish_pipeline()
                if operator == "\n" and pending:
                    pos = self.bodies(pos, pending, depth, nested)
                    pending = []
                continue
            if not command.words:
                name_end = _name_end(text, pos)
                equals = name_end + (1 if text.startswith("+=", name_end) else 0)
                if name_end > pos and text.startswith("=", equals):  # NAME=value, quoted or not
                    name, pos = text[pos:name_end], equals + 1
                    value = Word()
                    if pos < end and text[pos] not in _META:
                        value, pos = self.word(pos, depth, nested)
                    command.assigns.append((name, value))
                    continue
            word, pos = self.word(pos, depth, nested)
            if not command.words and not word.quoted and word.known and word.text in _RESERVED:
                if word.text in ("for", "select", "case"):
                    pos = self.skip_header(pos, word.text)
                continue
            command.words.extend(_braces(word))
        finish_pipeline()
        return script, pos

    def skip_header(self, pos: int, keyword: str) -> int:
        """``for NAME in WORDS`` up to its end, ``case WORD in`` up to ``in``: their words
        run nothing (``case``'s patterns follow, each closed by ``)``)."""
        text, end = self.text, len(self.text)
        while pos < end and text[pos] not in ";\n":
            word_in = text.startswith("in", pos) and text[pos - 1] in " \t"
            if keyword == "case" and word_in and (pos + 2 == end or text[pos + 2] in " \t\n"):
                return pos + 2
            pos += 1
        return pos

    def redirect_at(self, pos: int) -> tuple[str, str, int] | None:
        """A redirection operator at ``pos`` (with the fd number before it): its operator, fd
        and where it ends."""
        text = self.text
        start = pos
        while pos < len(text) and text[pos].isdigit():
            pos += 1
        if pos > start and (pos >= len(text) or text[pos] not in "<>"):
            return None  # a word of digits
        if start > 0 and pos > start and text[start - 1] not in _META:
            return None
        at = text[pos : pos + 1]
        op = next((o for o in _REDIRECTS.get(at, ()) if text.startswith(o, pos)), None)
        if op is None:
            return None
        if op in ("<", ">") and text.startswith("(", pos + 1):
            return None  # <( … ): a process substitution, a word
        return op, text[start:pos], pos + len(op)

    def bodies(
        self, pos: int, pending: list[Redirect], depth: int, nested: list[list[Command]]
    ) -> int:
        """The here-documents' bodies, one after the other, from the line after ``<<``."""
        text = self.text
        for redirect in pending:
            assert redirect.target is not None
            delimiter = redirect.target.text
            lines: list[str] = []
            while pos < len(text):
                newline = text.find("\n", pos)
                line = text[pos:] if newline < 0 else text[pos:newline]
                pos = len(text) if newline < 0 else newline + 1
                self.tick()
                check = line.lstrip("\t") if redirect.op == "<<-" else line
                if check == delimiter:
                    break
                lines.append(check)
            body = "\n".join(lines)
            redirect.body = body
            if not redirect.target.quoted:
                # As in double quotes: what is substituted in it runs.
                found = Word()
                self.double(body, 0, found, depth, nested, stop=None)
        return pos

    # --- a word ---------------------------------------------------------------------------

    def word(self, pos: int, depth: int, nested: list[list[Command]]) -> tuple[Word, int]:
        text, end = self.text, len(self.text)
        word = Word()
        out: list[str] = []
        start = pos
        while pos < end:
            self.tick()
            c = text[pos]
            if c not in _SPECIAL:
                run = pos + 1
                while run < end and text[run] not in _SPECIAL:
                    run += 1
                chunk = text[pos:run]
                if pos == start and chunk.startswith("~"):
                    chunk = self._tilde(chunk)
                if "*" in chunk or "?" in chunk or "[" in chunk:
                    word.glob = True
                out.append(chunk)
                pos = run
                continue
            if c in _META:
                if c in "<>" and text.startswith("(", pos + 1):  # <( … ) >( … )
                    inner, pos = self.script(pos + 2, depth + 1, ")")
                    word.subs.append(inner)
                    nested.extend(inner.pipelines)
                    word.known = False
                    out.append("$(" + _shown(inner) + ")")
                    continue
                break
            if c == "\\":
                if text.startswith("\n", pos + 1):
                    pos += 2
                else:
                    out.append(text[pos + 1 : pos + 2])
                    word.quoted = True
                    pos += 2
            elif c == "'":
                close = text.find("'", pos + 1)
                close = end if close < 0 else close
                out.append(text[pos + 1 : close])
                word.quoted = True
                pos = close + 1
            elif c == '"':
                word.quoted = True
                collected = Word()
                pos = self.double(text, pos + 1, collected, depth, nested, stop='"')
                out.append(collected.text)
                word.known = word.known and collected.known
                word.subs += collected.subs
            elif c == "`":
                pos = self.backquote(pos, word, out, depth, nested)
            elif c == "$":
                pos = self.dollar(pos, word, out, depth, nested)
            else:
                out.append(c)
                pos += 1
        word.text = "".join(out)
        return word, pos

    def _tilde(self, chunk: str) -> str:
        if chunk == "~" or chunk.startswith("~/"):
            home = self.env.get("HOME")
            return (home + chunk[1:]) if home else chunk
        return chunk

    def double(
        self,
        text: str,
        pos: int,
        word: Word,
        depth: int,
        nested: list[list[Command]],
        *,
        stop: str | None,
    ) -> int:
        """The inside of ``"…"`` (``stop``) or of an unquoted here-document (to the end)."""
        out: list[str] = []
        end = len(text)
        saved = self.text
        self.text = text  # dollar() and backquote() read from self.text
        try:
            while pos < end:
                self.tick()
                c = text[pos]
                if stop is not None and c == stop:
                    pos += 1
                    break
                if c == "\\" and pos + 1 < end:
                    nxt = text[pos + 1]
                    if nxt == "\n":
                        pos += 2
                        continue
                    if nxt in '$`"\\':
                        out.append(nxt)
                        pos += 2
                        continue
                    out.append(c)
                    pos += 1
                elif c == "$":
                    pos = self.dollar(pos, word, out, depth, nested, quoted=True)
                elif c == "`":
                    pos = self.backquote(pos, word, out, depth, nested)
                else:
                    run = pos + 1
                    while run < end and text[run] not in '\\$`"':
                        run += 1
                    out.append(text[pos:run])
                    pos = run
        finally:
            self.text = saved
        word.text += "".join(out)
        return pos

    def backquote(
        self, pos: int, word: Word, out: list[str], depth: int, nested: list[list[Command]]
    ) -> int:
        text = self.text
        inner: list[str] = []
        at = pos + 1
        while at < len(text) and text[at] != "`":
            if text[at] == "\\" and at + 1 < len(text) and text[at + 1] in "`$\\":
                inner.append(text[at + 1])
                at += 2
                continue
            inner.append(text[at])
            at += 1
        script = _Reader("".join(inner), self.env, self.deadline)
        script.vars = self.vars
        script.ticks = self.ticks
        read, _ = script.script(0, depth + 1, None)
        self.ticks = script.ticks
        word.subs.append(read)
        nested.extend(read.pipelines)
        word.known = False
        out.append("$(" + _shown(read) + ")")
        return at + 1

    def dollar(
        self,
        pos: int,
        word: Word,
        out: list[str],
        depth: int,
        nested: list[list[Command]],
        *,
        quoted: bool = False,
    ) -> int:
        """A ``$…`` at ``pos``: its value appended to ``out``; where it ends. ``quoted``:
        inside double quotes (where ``$'`` and ``$"`` are a plain ``$``)."""
        text, end = self.text, len(self.text)
        nxt = text[pos + 1 : pos + 2]
        if quoted and nxt in ("'", '"'):
            out.append("$")
            return pos + 1
        if nxt == "'":
            value, pos = _ansi_c(text, pos + 2)
            out.append(value)
            word.quoted = True
            return pos
        if nxt == "(":
            if text.startswith("((", pos + 1):
                close = _arithmetic_end(text, pos + 3)
                out.append(text[pos:close])
                word.known = False
                return close
            inner, pos = self.script(pos + 2, depth + 1, ")")
            word.subs.append(inner)
            nested.extend(inner.pipelines)
            word.known = False
            out.append("$(" + _shown(inner) + ")")
            return pos
        if nxt == "{":
            close = _brace_end(text, pos + 2)
            body = text[pos + 2 : close]
            out.append(self.parameter(body, word, depth, nested))
            return min(close + 1, end)
        if nxt == '"':  # $"…": a translated string, read as "…"
            return pos + 1
        name_end = _name_end(text, pos + 1)
        if name_end > pos + 1:
            out.append(self.value(text[pos + 1 : name_end], word))
            return name_end
        if nxt and nxt in "@*#?$!-0123456789":
            if nxt not in "@*":
                word.known = False  # $@ $* outside a function: nothing
            return pos + 2
        out.append("$")
        return pos + 1

    def value(self, name: str, word: Word) -> str:
        if name in self.vars:
            found = self.vars[name]
            if found is None:
                word.known = False
                return ""
            return found
        if name in FROM_ENV and name in self.env:
            return self.env[name]
        word.known = False
        return ""

    def parameter(self, body: str, word: Word, depth: int, nested: list[list[Command]]) -> str:
        """``${NAME}``, ``${NAME:-word}`` (and ``-``, ``:=``, ``=``); anything else unknown."""
        name_end = _name_end(body, 0)
        if name_end == 0:
            word.known = False
            return ""
        name, rest = body[:name_end], body[name_end:]
        if not rest:
            return self.value(name, word)
        for op in (":-", "-", ":=", "="):
            if rest.startswith(op):
                if name in self.vars or (name in FROM_ENV and name in self.env):
                    return self.value(name, word)
                default = Word()
                self.double(rest[len(op) :], 0, default, depth, nested, stop=None)
                word.subs += default.subs
                word.known = word.known and default.known
                return default.text
        word.known = False
        return ""


def _ansi_c(text: str, pos: int) -> tuple[str, int]:
    """``$'…'`` from just after its quote: the decoded text and where it ends."""
    out: list[str] = []
    end = len(text)
    while pos < end and text[pos] != "'":
        c = text[pos]
        if c != "\\" or pos + 1 >= end:
            out.append(c)
            pos += 1
            continue
        nxt = text[pos + 1]
        if nxt in _ANSI:
            out.append(_ANSI[nxt])
            pos += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            digits = ""
            at = pos + 2
            while at < end and len(digits) < width and text[at] in "0123456789abcdefABCDEF":
                digits += text[at]
                at += 1
            out.append(_char(int(digits, 16)) if digits else "\\" + nxt)
            pos = at
        elif nxt in "01234567":
            digits = ""
            at = pos + 1
            while at < end and len(digits) < 3 and text[at] in "01234567":
                digits += text[at]
                at += 1
            out.append(_char(int(digits, 8)))
            pos = at
        elif nxt == "c" and pos + 2 < end:
            out.append(chr(ord(text[pos + 2]) & 0x1F))
            pos += 3
        else:
            out.append("\\" + nxt)
            pos += 2
    return "".join(out), min(pos + 1, end)


def _char(code: int) -> str:
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return "\ufffd"


def _name_end(text: str, pos: int) -> int:
    """Past the shell name (``[A-Za-z_][A-Za-z0-9_]*``) at ``pos``; ``pos`` when none."""
    if pos >= len(text) or text[pos] not in _NAME_FIRST:
        return pos
    pos += 1
    while pos < len(text) and text[pos] in _NAME_REST:
        pos += 1
    return pos


def _skip_blanks(text: str, pos: int) -> int:
    while pos < len(text):
        if text[pos] in " \t":
            pos += 1
        elif text.startswith("\\\n", pos):
            pos += 2
        else:
            break
    return pos


def _arithmetic_end(text: str, pos: int) -> int:
    """Just past the ``))`` closing an arithmetic expression opened before ``pos``."""
    depth = 0
    while pos < len(text):
        c = text[pos]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return pos + 2 if text.startswith("))", pos) else pos + 1
            depth -= 1
        pos += 1
    return pos


def _brace_end(text: str, pos: int) -> int:
    """The ``}`` closing a ``${`` whose body starts at ``pos`` (quotes and nesting skipped)."""
    depth = 0
    while pos < len(text):
        c = text[pos]
        if c == "\\":
            pos += 2
            continue
        if c == "'":
            close = text.find("'", pos + 1)
            pos = len(text) if close < 0 else close + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return pos
            depth -= 1
        pos += 1
    return pos


def _braces(word: Word) -> list[Word]:
    """A literal word with one unquoted ``{a,b}`` list, as bash expands it."""
    if word.quoted or not word.known or "{" not in word.text or "," not in word.text:
        return [word]
    text = word.text
    opening, closing = text.find("{"), text.find("}")
    one_list = text.count("{") == 1 and text.count("}") == 1 and opening < closing
    if not one_list or "," not in text[opening:closing]:
        return [word]
    words = []
    for item in text[opening + 1 : closing].split(","):
        one = Word()
        one.text = text[:opening] + item + text[closing + 1 :]
        one.glob = word.glob
        words.append(one)
    return words


def _shown(script: Script) -> str:
    """A substitution as the rules see it inside a word: its commands' words."""
    return " ; ".join(" | ".join(" ".join(c.argv) for c in p) for p in script.pipelines)


def read(
    command: str, *, env: Mapping[str, str] | None = None, deadline: float | None = None
) -> Script:
    """``command`` as bash reads it (see the module's docstring). Raises
    :class:`Unreadable` past the ``deadline`` or :data:`MAX_DEPTH`."""
    reader = _Reader(command, os.environ if env is None else env, deadline)
    try:
        script, _ = reader.script(0, 0, None)
    except RecursionError:
        raise Unreadable(f"substitutions nested deeper than {MAX_DEPTH}") from None
    return script
