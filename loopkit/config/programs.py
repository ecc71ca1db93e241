"""Which program a ``[loop]`` command runs, and whether it is there: ``doctor`` and ``run``
share this, so a typo (``claud``) is named at start instead of failing every iteration.

The contract, in order:

1. A command that is an argv list runs without a shell: its first word is looked up as
   ``execvp`` does (a name with a ``/`` from the workspace, else each ``PATH`` entry).
2. A shell string (run by ``/bin/sh -c``) is read as the shell would read it, up to the
   first point where what runs next cannot be known without running it. Checked, in
   order: every command that certainly runs — the first one; those after ``;``, ``&`` or a
   newline (after ``set -e``: only when the one before certainly succeeded); every member
   of a pipeline; after ``&&`` only when the one before certainly succeeded (``cd`` into a
   folder that is there, ``true``, ``:``); the first commands of ``( … )``, ``{ …; }``
   and of an ``if`` / ``while`` / ``until`` condition. Through ``!``, ``VAR=x`` and
   redirections, and into the command that ``exec``, ``command``, ``time``, ``nice``,
   ``nohup``, ``env``, ``timeout``, ``setsid`` and ``stdbuf`` run, and into the string of
   ``sh -c '…'`` / ``bash -c '…'``.
3. It stops — and says nothing more — at anything it does not follow: a command after
   ``||`` or inside a branch or loop body, a word with an expansion (``$x``, ``$(…)``,
   `` `…` ``, a glob, ``~``), ``PATH`` set to an expansion, ``.``/``source``/``eval``, a
   builtin it does not know, ``for``, ``case``, a function, a here-document.
4. A program is reported missing only when the shell agrees: ``/bin/sh`` finds the string
   free of syntax errors (``sh -n``), and ``command -v`` there — the real shell's builtins,
   keywords and ``PATH`` — does not find the name either. A path (``./agent.sh``) is
   missing when it is not there, or not an executable file, as ``execve`` sees it.

So it is never wrong about a program the shell would run: it may say nothing about a
missing one it cannot follow, but "missing" means ``sh -c`` would fail to find it.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

from loopkit.config.shellwords import REDIRECTIONS, GiveUp, Token, tokens
from loopkit.datarecord import record, replace
from loopkit.wrappers import taking_values

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from loopkit.config import Config
    from loopkit.config.values import Command

__all__ = ["Missing", "loop_problems", "missing_program", "named_commands"]


@record(frozen=True, slots=True)
class Missing:
    """A program a command runs that is not there: ``program`` as written, ``why`` (one
    phrase: "is not found on PATH", "is not executable", …) and ``fix``."""

    program: str
    why: str
    fix: str

    def text(self) -> str:
        return f"{self.program!r} {self.why}"


def missing_program(
    command: Command, *, cwd: Path, env: Mapping[str, str] | None = None
) -> Missing | None:
    """The first program ``command`` certainly runs that is not there, or None (all found,
    or not knowable without running it). ``cwd`` and ``env``: where and with what the
    command runs (default: this process's environment)."""
    env = os.environ if env is None else env
    state = State(cwd=cwd, path=env.get("PATH", os.defpath))
    try:
        if isinstance(command, tuple):
            [word, *args] = _literal(list(command))
            return _Walk([], env, shell=False).run(word, args, state, builtins=False).missing
        return _shell_string(command, state, env)
    except GiveUp:
        return None


def loop_problems(config: Config, env: Mapping[str, str] | None = None) -> list[str]:
    """One line for each ``[loop]`` command (agent, resume, verify, done, preflight) whose
    program is missing: what, where, how to fix. The commands run from the workspace."""
    file = config.file or config.workspace / "loopkit.toml"
    found: list[str] = []
    for name, command in named_commands(config):
        missing = missing_program(command, cwd=config.workspace, env=env)
        if missing is not None:
            found.append(f"[loop] {name}: {missing.text()}; {missing.fix} in {file}")
    return found


def named_commands(config: Config) -> list[tuple[str, Command]]:
    """The ``[loop]`` commands a loop runs, each with its key: agent, resume, verify, done,
    and each preflight."""
    loop = config.loop
    named = [("agent", loop.agent), ("resume", loop.resume), ("verify", loop.verify),
             ("done", loop.done)]  # fmt: skip
    named += [("preflight", command) for command in loop.preflight]
    return [(name, command) for name, command in named if command is not None]


# --- following what runs ----------------------------------------------------------------------


@record(frozen=True, slots=True)
class State:
    cwd: Path | None  # None: a `cd` went somewhere not known
    path: str | None  # PATH; None: set to something not known
    errexit: bool = False  # `set -e`: a failure ends the script


@record(frozen=True, slots=True)
class _Ran:
    """What running one command leaves: the state after it, whether it certainly
    succeeded, and the program found missing, if any (then nothing after it counts)."""

    state: State
    succeeded: bool = False
    missing: Missing | None = None


RESERVED = frozenset(("if", "then", "else", "elif", "fi", "do", "done", "case", "esac",
                       "while", "until", "for", "in", "{", "}", "!", "function", "select",
                       "coproc"))  # fmt: skip
# Builtins that leave PATH and the folder as they were.
_NEUTRAL = frozenset(("echo", "printf", "test", "[", "pwd", "type", "wait", "times", "jobs",
                      "kill", "umask", "ulimit", "trap", "false"))  # fmt: skip
_SUCCEED = frozenset((":", "true"))
SHELLS = frozenset(("sh", "bash", "dash"))
BASH_ONLY = frozenset(("[[", "source", "function", "select", "shopt", "declare", "local"))


def _shell_string(text: str, state: State, env: Mapping[str, str]) -> Missing | None:
    ran = _Walk(tokens(text), env, shell=True).list_(state, ends=())
    if ran.missing is not None and not sh_ok(["-n", "-c", text], state, env):
        raise GiveUp  # sh would refuse the string before running any of it
    return ran.missing


def _literal(words: list[str]) -> list[Token]:
    return [Token("word", w, quoted=True) for w in words]


class _Walk:
    """Follows the commands of one shell string (``shell``), or of an argv, in the order
    they run as far as that is certain. Raises GiveUp where it cannot follow."""

    def __init__(self, tokens: list[Token], env: Mapping[str, str], *, shell: bool) -> None:
        self.tokens = tokens
        self.at = 0
        self.env = env
        self.shell = shell

    # the grammar, as far as it is followed

    def peek(self) -> Token | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def is_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.text in ops

    def is_reserved(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "word" and not tok.quoted and tok.text in words

    def at_end(self, ends: tuple[str, ...]) -> bool:
        return self.peek() is None or self.is_reserved(*ends) or (")" in ends and self.is_op(")"))

    def list_(self, state: State, *, ends: tuple[str, ...]) -> _Ran:
        """Commands up to one of ``ends`` (reserved words, or ``)``) or the end."""
        ran = _Ran(state, succeeded=True)
        while True:
            while self.is_op("\n", ";"):
                self.at += 1
            if self.at_end(ends):
                return ran
            if ran.state.errexit and not ran.succeeded:
                raise GiveUp  # set -e: what follows runs only if that succeeded
            before = ran.state
            ran = self.and_or(before)
            if ran.missing is not None:
                return ran
            if self.is_op("&"):
                self.at += 1
                ran = _Ran(before)  # its changes stay in the background job
            elif not (self.is_op("\n", ";") or self.at_end(ends)):
                raise GiveUp

    def and_or(self, state: State) -> _Ran:
        ran = self.pipeline(state)
        while ran.missing is None and self.is_op("&&", "||"):
            op = self.tokens[self.at].text
            if op == "||" or not ran.succeeded:
                raise GiveUp  # what follows may not run
            self.at += 1
            while self.is_op("\n"):
                self.at += 1
            ran = self.pipeline(ran.state)
        return ran

    def pipeline(self, state: State) -> _Ran:
        negated = self.is_reserved("!")
        if negated:
            self.at += 1
        ran = self.command(state)
        members = 1
        while ran.missing is None and self.is_op("|", "|&"):
            self.at += 1
            while self.is_op("\n"):
                self.at += 1
            ran = self.command(state)  # every member starts
            members += 1
        if members > 1:  # each member ran in a subshell of its own
            ran = replace(ran, state=state, succeeded=False)
        return replace(ran, succeeded=False) if negated else ran

    def command(self, state: State) -> _Ran:
        if self.is_op("("):
            self.at += 1
            inner = self.list_(state, ends=(")",))
            if inner.missing is None:
                self.expect(")")
                self.redirections()
            return _Ran(state, missing=inner.missing)  # a subshell's changes stay in it
        if self.is_reserved("{"):
            self.at += 1
            inner = self.list_(state, ends=("}",))
            if inner.missing is None:
                self.expect("}")
                self.redirections()
            return replace(inner, succeeded=False)
        if self.is_reserved("if", "while", "until"):
            self.at += 1
            condition = self.list_(state, ends=("then", "do"))
            if condition.missing is not None:
                return condition
            raise GiveUp  # what runs next depends on the condition
        if self.is_reserved(*RESERVED):
            raise GiveUp  # for, case, a branch's body, …: not followed
        return self.simple(state)

    def expect(self, closing: str) -> None:
        if not (self.is_op(closing) or self.is_reserved(closing)):
            raise GiveUp
        self.at += 1

    def redirections(self) -> None:
        while True:
            tok = self.peek()
            if tok is not None and tok.kind == "io":
                self.at += 1
            elif tok is not None and tok.kind == "op" and tok.text in REDIRECTIONS:
                self.at += 1
                target = self.peek()
                if target is None or target.kind != "word":
                    raise GiveUp
                self.at += 1
            else:
                return

    def simple(self, state: State) -> _Ran:
        """A simple command: assignments, redirections, then its words."""
        words: list[Token] = []
        path: Token | None = None
        while True:
            self.redirections()
            tok = self.peek()
            if tok is None or tok.kind != "word":
                break
            if not words and tok.assigns:
                path = tok if tok.text.startswith("PATH=") else path
            else:
                words.append(tok)
            self.at += 1
        if self.is_op("("):
            raise GiveUp  # a function definition
        own = state
        if path is not None:
            if path.dynamic:
                raise GiveUp
            own = replace(state, path=path.text.partition("=")[2])
        if not words:  # assignments alone: they stay in the shell
            return _Ran(own, succeeded=True)
        ran = self.run(words[0], words[1:], own, builtins=True)
        if path is not None:  # NAME=value before a command is for that command only
            return replace(ran, state=replace(ran.state, path=state.path))
        return ran

    # what a command does

    def run(self, word: Token, args: list[Token], state: State, *, builtins: bool) -> _Ran:
        """Run ``word args`` as the shell would (``builtins``: the shell's own come first)
        or as a program runs another (execvp)."""
        if word.dynamic:
            raise GiveUp
        name = word.text
        if self.shell and builtins and not word.quoted:
            builtin = self.builtin(name, args, state)
            if builtin is not None:
                return builtin
        missing = self.lookup(name, state)
        if missing is not None:
            return _Ran(state, missing=missing)
        if name in SHELLS:
            return self.shell_c(args, state)
        inner = wrapped(name, args)
        if inner:
            ran = self.run(inner[0], inner[1:], state, builtins=False)
            return _Ran(state, missing=ran.missing)
        return _Ran(state)  # a program cannot change the shell's PATH or folder

    def builtin(self, name: str, args: list[Token], state: State) -> _Ran | None:
        """A builtin the shell runs itself and this follows, or None."""
        if name in _SUCCEED:
            return _Ran(state, succeeded=True)
        if name in _NEUTRAL:
            return _Ran(state)
        if name == "cd":
            return _cd(args, state, self.env)
        if name in ("exec", "command", "time"):
            return self.prefix(name, args, state)
        if name in ("export", "readonly"):
            for arg in args:
                if arg.dynamic or arg.text.startswith("-"):
                    raise GiveUp
                if arg.text.startswith("PATH="):
                    state = replace(state, path=arg.text[5:])
            return _Ran(state, succeeded=True)
        if name == "unset":
            if any(a.dynamic or a.text == "PATH" for a in args):
                raise GiveUp
            return _Ran(state)
        if name == "set":
            flags = [a.text for a in args if not a.dynamic]
            if not args or len(flags) < len(args) or not all(map(_set_flags, flags)):
                raise GiveUp
            errexit = state.errexit or any(f[0] == "-" and "e" in f for f in flags)
            return _Ran(replace(state, errexit=errexit), succeeded=True)
        if name in ("exit", "return"):
            raise GiveUp  # nothing after it runs
        return None

    def prefix(self, name: str, args: list[Token], state: State) -> _Ran:
        """``exec``, ``command``, ``time``: the command they run."""
        rest = list(args)
        if rest and rest[0].dynamic:
            raise GiveUp
        if name == "command":
            if rest and rest[0].text in ("-v", "-V"):
                return _Ran(state)  # asks, runs nothing
        elif name == "time":  # a keyword in bash, a program in dash
            if on_path("time", state) is False and not self.sh_finds("time", state):
                return _Ran(state, missing=self.lookup("time", state))
            while rest and not rest[0].dynamic and rest[0].text.startswith("-"):
                takes = rest[0].text in taking_values("time")
                rest = rest[2:] if takes else rest[1:]
        if rest and rest[0].text.startswith("-"):
            raise GiveUp  # exec -a, command -p, …: not followed
        if not rest:
            return _Ran(state)  # exec with redirections alone, a bare time
        ran = self.run(rest[0], rest[1:], state, builtins=name != "exec")
        if name == "exec" and ran.missing is None:
            raise GiveUp  # the shell is gone: nothing after it runs
        return ran

    def shell_c(self, args: list[Token], state: State) -> _Ran:
        """``sh -c 'STRING'`` (and bash, dash): the string's own commands."""
        rest = list(args)
        while rest and not rest[0].dynamic and rest[0].text in ("-e", "-u", "-x"):
            rest = rest[1:]
        if len(rest) < 2 or rest[0].dynamic or rest[1].dynamic or self.env.get("BASH_ENV"):
            return _Ran(state)
        flag = rest[0].text
        if not flag.startswith("-") or "c" not in flag or set(flag[1:]) - set("ceux"):
            return _Ran(state)  # a script, a login shell, …: not followed
        inner = replace(state, errexit="e" in flag)
        return _Ran(state, missing=_shell_string(rest[1].text, inner, self.env))

    # looking a program up

    def lookup(self, name: str, state: State) -> Missing | None:
        """``name`` looked up as the shell (or execvp) does: None when found or not known;
        raises GiveUp for a builtin or keyword this does not follow."""
        if "/" in name:
            return path_missing(name, state.cwd)
        if on_path(name, state) is not False:
            return None
        if self.shell and self.sh_finds(name, state):
            raise GiveUp
        fix = "install it, or fix the command"
        if self.shell and name in BASH_ONLY:
            fix = f"{name!r} is bash, not sh: write the command for /bin/sh (or as bash -c '…')"
        return Missing(name, "is not found on PATH", fix)

    def sh_finds(self, name: str, state: State) -> bool:
        """Does /bin/sh find ``name`` (a builtin, a keyword, or on PATH)?"""
        return sh_ok(["-c", 'command -v "$1" >/dev/null', "sh", name], state, self.env)


def on_path(name: str, state: State) -> bool | None:
    """Is ``name`` an executable file in a PATH entry? None when that is not known."""
    if state.path is None or not name:
        return None
    entries = state.path.split(":")
    if state.cwd is None and any(not os.path.isabs(e) for e in entries):
        return None  # a relative entry, from a folder not known
    for entry in entries:
        folder = Path(entry or ".")
        if not folder.is_absolute() and state.cwd is not None:
            folder = state.cwd / folder
        if _kind(folder / name) == "file" and os.access(folder / name, os.X_OK):
            return True
    return False  # an entry that cannot be read is passed over, as execvp passes it over


def _kind(path: Path) -> str | None:
    """``file``, ``folder``, ``other`` — or None: not there, or not to be reached (a folder
    on the way that cannot be searched, a name too long, a loop of links): never an error."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        return None
    return "file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode) else "other"


def _set_flags(arg: str) -> bool:
    return len(arg) > 1 and arg[0] in "-+" and not set(arg[1:]) - set("euxv")


def _cd(args: list[Token], state: State, env: Mapping[str, str]) -> _Ran:
    """``cd DIR``: followed only for one literal folder (and no CDPATH to search)."""
    if len(args) != 1 or args[0].dynamic or args[0].text.startswith("-") or state.cwd is None:
        return _Ran(replace(state, cwd=None))
    text = args[0].text
    target = Path(text)
    if not target.is_absolute():
        if env.get("CDPATH") and not text.startswith(("./", "../")):
            return _Ran(replace(state, cwd=None))
        target = state.cwd / target
    if _kind(target) == "folder" and os.access(target, os.X_OK):
        return _Ran(replace(state, cwd=Path(os.path.normpath(target))), succeeded=True)
    return _Ran(state)  # it fails: the folder stays


def path_missing(name: str, cwd: Path | None) -> Missing | None:
    path = Path(name)
    if not path.is_absolute():
        if cwd is None:
            return None
        path = cwd / path
    try:
        path.stat()
    except FileNotFoundError:
        where = "" if Path(name).is_absolute() else f" in {cwd}"
        return Missing(name, f"is not found (no such file{where})", "fix the path")
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        return Missing(name, f"cannot be reached ({why})", "fix the path or its folders' modes")
    if _kind(path) != "file" or not os.access(path, os.X_OK):
        return Missing(name, "is not executable", f"chmod +x {name}, or fix the command")
    return None


# The wrappers followed to the program they run (its PATH is the command's): the others
# (sudo's secure path, xargs' input, ...) are not followed.
_FOLLOWED = frozenset(("nice", "nohup", "env", "timeout", "setsid", "stdbuf"))
_ENV_FLAGS = frozenset(("-i", "-0", "--ignore-environment", "--null", "-", "-u", "--unset"))


def wrapped(name: str, args: list[Token]) -> list[Token]:
    """The command a wrapper program runs, with its arguments; [] when ``name`` is not a
    wrapper, or what it runs is not known."""
    if name not in _FOLLOWED:
        return []
    takes = taking_values(name)
    rest = list(args)
    while rest and not rest[0].dynamic:
        arg = rest[0].text
        if arg == "--":
            rest = rest[1:]
            break
        if name == "env" and "=" in arg and not arg.startswith("-"):
            if arg.startswith("PATH="):
                return []  # looked up on the new PATH: not followed
            rest = rest[1:]
            continue
        if not arg.startswith("-"):
            break
        if name == "env" and arg not in _ENV_FLAGS and not arg.startswith("--unset="):
            return []  # -C, -S, …: not followed
        if name == "nice" and arg[1:].isdigit():
            rest = rest[1:]
            continue
        rest = rest[2:] if arg in takes else rest[1:]
    if name == "timeout":
        rest = rest[1:]  # the duration
    return rest


def sh_ok(argv: list[str], state: State, env: Mapping[str, str]) -> bool:
    """``/bin/sh ARGV`` in the command's folder with its PATH: did it exit 0?"""
    run_env = dict(env)
    if state.path is not None:
        run_env["PATH"] = state.path
    try:
        done = subprocess.run(
            ["/bin/sh", *argv],
            cwd=state.cwd,
            env=run_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return True  # the shell cannot be asked: never claim a program is missing
    return done.returncode == 0
