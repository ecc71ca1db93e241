"""Every program a shell command line may run — after ``&&``, ``||``, ``;``, ``&``, in a
pipeline, an ``if``, a loop or a ``case`` — and which of them are not there.

:mod:`~loopkit.config.programs` names only what certainly runs, so ``loopkit run`` can refuse
to start on it; ``loopkit doctor`` reports this too: a typo after ``&&`` in verify
(``./verify.sh && pytets -q``) fails every iteration in which what comes before it
succeeds. The contract, in order:

1. The string is read into the shell's tokens (:mod:`~loopkit.config.shellwords`). A word in
   command position — the first of a simple command, after an operator, after ``if``,
   ``then``, ``else``, ``elif``, ``while``, ``until``, ``do``, ``!`` or ``{`` — is a
   program, past assignments and redirections; so is what ``exec``, ``command``, ``time``,
   ``env``, ``nice``, ``nohup``, ``timeout``, ``setsid`` and ``stdbuf`` run, and every
   program of the string of ``sh -c '…'`` (``bash``, ``dash``).
2. Not programs: ``for``'s words, ``case``'s patterns, a function's name (defined in the
   string, and every call of it), a word with an expansion or a glob.
3. A name the string asks about — ``command -v X``, ``which X``, ``type X``, ``hash X`` — is
   guarded from there on: its author checks for it first, so a later use is not reported.
4. It says nothing about a string that decides for itself what runs in a way not read here —
   ``PATH`` set or unset, ``.``, ``source``, ``eval``, ``alias``, a here-document, an open
   quote — nor about a relative path after a ``cd``.
5. Missing means what it means to :mod:`~loopkit.config.programs`: a name that is no
   executable file on ``PATH`` and that ``/bin/sh``'s ``command -v`` (its builtins, its
   keywords, its ``PATH``) does not find either — asked once for all of them — or a path
   that is not there or not executable. A string ``/bin/sh`` cannot read at all is a syntax
   error (:func:`syntax_error`), and then nothing in it runs.
"""

from __future__ import annotations

import os
import re
import subprocess

from loopkit.config.programs import (
    BASH_ONLY,
    RESERVED,
    SHELLS,
    Missing,
    State,
    on_path,
    path_missing,
    wrapped,
)
from loopkit.config.shellwords import REDIRECTIONS, GiveUp, tokens
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from loopkit.config.shellwords import Token
    from loopkit.config.values import Command

__all__ = ["MayRun", "may_be_missing", "syntax_error"]

_AFTER = {"&&": "after `&&`", "||": "after `||`", ";": "after `;`", "&": "after `&`",
          "\n": "on a later line", "|": "in a pipeline", "|&": "in a pipeline",
          "(": "in a subshell"}  # fmt: skip
_WITHIN = {"if": "in an `if`", "then": "in an `if`", "else": "in an `if`", "elif": "in an `if`",
           "while": "in a loop", "until": "in a loop", "do": "in a loop"}  # fmt: skip
_OPENERS = frozenset(("if", "then", "else", "elif", "while", "until", "do", "!", "{"))
_CLOSERS = frozenset(("fi", "done", "}", "esac"))
_ASKERS = frozenset(("which", "type", "hash"))
_OPAQUE = frozenset((".", "source", "eval", "alias"))


@record(frozen=True, slots=True)
class MayRun:
    """A program the command may run that is not there, and ``where`` it runs (``after
    `&&```, ``in a pipeline``, …; ``first`` for the command's first)."""

    missing: Missing
    where: str


@record(slots=True)
class _Seen:
    name: str
    where: str
    after_cd: bool
    guarded: bool  # the string asked for it before this use


class _Scan:
    """The programs of one string (and of the strings it hands to ``sh -c``)."""

    def __init__(self) -> None:
        self.programs: list[_Seen] = []
        self.guarded: set[str] = set()
        self.functions: set[str] = set()
        self.cd = False

    def string(self, text: str, where: str) -> None:
        toks = tokens(text)
        i, n = 0, len(toks)
        command, pattern, here = True, False, where
        while i < n:
            tok = toks[i]
            if pattern:  # a case pattern, up to its `)`; or the case's end
                if tok.kind == "word" and not tok.quoted and tok.text == "esac":
                    pattern, command = False, False
                elif tok.kind == "op" and tok.text == ")":
                    pattern, command, here = False, True, "in a `case`"
                i += 1
                continue
            if tok.kind == "io":
                i += 1
                continue
            if tok.kind == "op":
                if tok.text in REDIRECTIONS:
                    i += 2
                elif tok.text == ";;":
                    pattern = True
                    i += 1
                else:
                    command = tok.text != ")"
                    here = _AFTER.get(tok.text, here)
                    i += 1
                continue
            reserved = not tok.quoted and not tok.dynamic
            if not command:  # an argument, or a word past a command's end
                i += 1
                continue
            if reserved and tok.text in _OPENERS:
                here = _WITHIN.get(tok.text, here)
                i += 1
            elif reserved and tok.text in _CLOSERS:
                command = False
                i += 1
            elif reserved and tok.text in ("for", "select"):
                i = _index_of(toks, i, "do")  # its words are no commands
            elif reserved and tok.text == "case":
                i, pattern = _index_of(toks, i, "in") + 1, True
            elif reserved and tok.text == "function" and i + 1 < n:
                self.functions.add(toks[i + 1].text)  # bash's `function NAME …`
                i += 2
            elif tok.assigns:
                if tok.text.startswith("PATH="):
                    raise GiveUp  # what runs is looked up on a PATH of its own
                i += 1
            elif _defines(toks, i):
                self.functions.add(tok.text)
                i, here = i + 3, "in a function"
            else:
                words, i = _simple(toks, i)
                self.simple(words, here)
                command = False

    def simple(self, words: list[Token], where: str) -> None:
        """One simple command's words: its program, and what it runs in turn."""
        if not words or words[0].dynamic:
            return
        head, args = words[0], words[1:]
        name = head.text
        if not head.quoted and name in _OPAQUE:
            raise GiveUp  # it defines what runs next in a way not read here
        if name in ("export", "readonly", "unset") and any(
            a.dynamic or a.text == "PATH" or a.text.startswith("PATH=") for a in args
        ):
            raise GiveUp
        if name == "cd":
            self.cd = True
        if name in RESERVED and not head.quoted:
            return
        self.programs.append(_Seen(name, where, self.cd, name in self.guarded))
        if name in _ASKERS or (name == "command" and args and args[0].text in ("-v", "-V")):
            self.guarded.update(a.text for a in args if not a.dynamic)
            return
        if name in ("exec", "command", "time"):
            rest = list(args)
            while rest and not rest[0].dynamic and rest[0].text.startswith("-"):
                rest = rest[2:] if rest[0].text in ("-f", "-o", "-a") else rest[1:]
            self.simple(rest, where)
        elif name in SHELLS:
            self.shell_c(args, where)
        else:
            inner = wrapped(name, args)
            if inner:
                self.simple(inner, where)

    def shell_c(self, args: list[Token], where: str) -> None:
        rest = list(args)
        while rest and not rest[0].dynamic and rest[0].text in ("-e", "-u", "-x"):
            rest = rest[1:]
        if len(rest) >= 2 and not (rest[0].dynamic or rest[1].dynamic):
            flag = rest[0].text
            if flag.startswith("-") and "c" in flag and not set(flag[1:]) - set("ceux"):
                self.string(rest[1].text, where)


def _index_of(toks: list[Token], start: int, word: str) -> int:
    """The index of the first unquoted ``word`` after ``start`` (the end when none)."""
    for index in range(start + 1, len(toks)):
        tok = toks[index]
        if tok.kind == "word" and not tok.quoted and tok.text == word:
            return index
    return len(toks)


def _defines(toks: list[Token], i: int) -> bool:
    """``NAME ( )``: a function's definition starts at ``i``."""
    return (
        i + 2 < len(toks)
        and toks[i + 1].kind == "op"
        and toks[i + 1].text == "("
        and toks[i + 2].kind == "op"
        and toks[i + 2].text == ")"
    )


def _simple(toks: list[Token], i: int) -> tuple[list[Token], int]:
    """The words of the simple command at ``i`` (redirections left out), and where it ends."""
    words: list[Token] = []
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "io":
            i += 1
        elif tok.kind == "op":
            if tok.text not in REDIRECTIONS:
                break
            i += 2
        else:
            words.append(tok)
            i += 1
    return words, i


def may_be_missing(
    command: Command, *, cwd: Path, env: Mapping[str, str] | None = None
) -> list[MayRun]:
    """Every program ``command`` may run that is not there, once each, in order (an argv
    runs one program: :func:`loopkit.config.programs.missing_program` checks it)."""
    if isinstance(command, tuple):
        return []
    env = os.environ if env is None else env
    scan = _Scan()
    try:
        scan.string(command, "first")
    except GiveUp:
        return []
    state = State(cwd=cwd, path=env.get("PATH", os.defpath))
    found: list[MayRun] = []
    asked: list[_Seen] = []
    seen: set[str] = set()
    for one in scan.programs:
        if one.name in seen or one.guarded or one.name in scan.functions:
            continue
        seen.add(one.name)
        if "/" in one.name:
            if one.after_cd and not os.path.isabs(one.name):
                continue  # relative to a folder a `cd` chose
            missing = path_missing(one.name, cwd)
            if missing is not None:
                found.append(MayRun(missing, one.where))
        elif on_path(one.name, state) is False:
            asked.append(one)
    absent = _not_found(sorted({one.name for one in asked}), state, env) if asked else set()
    for one in asked:
        if one.name in absent:
            fix = "install it, or fix the command"
            if one.name in BASH_ONLY:
                fix = f"{one.name!r} is bash, not sh: write it for /bin/sh (or as bash -c '…')"
            found.append(MayRun(Missing(one.name, "is not found on PATH", fix), one.where))
    return found


def _not_found(names: list[str], state: State, env: Mapping[str, str]) -> set[str]:
    """Which of ``names`` ``/bin/sh``'s ``command -v`` does not find (none, when the shell
    cannot be asked: never claim a program is missing)."""
    script = 'for n do command -v "$n" >/dev/null 2>&1 || printf "%s\\n" "$n"; done'
    run_env = {**env, "PATH": state.path or os.defpath}
    try:
        done = subprocess.run(["/bin/sh", "-c", script, "sh", *names], cwd=state.cwd,
                              env=run_env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return set(done.stdout.splitlines()) & set(names) if done.returncode == 0 else set()


def syntax_error(command: Command, *, cwd: Path) -> str | None:
    """What ``/bin/sh -n`` says of a shell string it cannot read (then nothing of it runs),
    or None."""
    if isinstance(command, tuple):
        return None
    try:
        done = subprocess.run(["/bin/sh", "-n", "-c", command], cwd=cwd,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode == 0:
        return None
    said = (done.stderr.strip().splitlines() or ["a syntax error"])[-1]
    return re.sub(r"\A(?:/bin/sh|sh|-c)?:?\s*(?:line )?\d*:\s*", "", said) or said
