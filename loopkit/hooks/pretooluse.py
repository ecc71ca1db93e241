"""``loopkit hook claude pretooluse``: Claude Code's PreToolUse hook (SPEC section 12).

It runs before every tool call, so the path of a call that surely matches no rule — this
module, the screen — imports only loopkit's own standard-library helpers (``discover``,
:mod:`~loopkit.hooks.rules`, :mod:`~loopkit.hooks.gatestamp`, and the shell reader and
:mod:`~loopkit.hooks.guard` for a command that may touch loopkit's own files) — no ``re``,
``typing`` or ``json``: its scans are written out by hand — and loads ``loopkit.toml`` only
when it changed since it last loaded (:func:`~loopkit.hooks.gatestamp.defaults_hold`): no
output, exit 0, about as fast as ``python -c pass``. Any other call goes to the matched
path, :mod:`~loopkit.hooks.gatecall`: read whole and matched, then a standing approval of
``.loopkit/allow.toml`` ("Allow always here") passes it at once, or else
:mod:`~loopkit.hooks.approve` asks for an approval bound to this exact call.

It fails closed (SPEC sections 17 and 28). Anything that goes wrong on a matched call, on
input that cannot be read (which could hide one), or anywhere before the call is known to
be ungated — a bug included — denies it (exit 2, one line on stderr): a broken gate never
lets a P0 call through. Claude Code takes any other exit, 1 for a traceback or 127 for a
hook it cannot find, for "proceed". So is denied, with the reason: every call while
``loopkit.toml`` does not load; a call over :data:`MAX_INPUT`; one not read and matched
within :data:`~loopkit.hooks.gatecall.READ_TIME`.
"""

from __future__ import annotations

import os
import sys

from loopkit import discover
from loopkit.hooks.commandline import WRITERS, understand
from loopkit.hooks.gatestamp import defaults_hold
from loopkit.hooks.guard import Guard
from loopkit.hooks.rules import DEFAULT_PROTECT, WORDS
from loopkit.hooks.shell import Unreadable

TYPE_CHECKING = False  # typing costs ~3 ms of a start of ~20: mypy reads the name as its own
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Shower = Callable[[str, Any], list[str]]  # the call as the human sees it

MAX_INPUT = 8 * 1024 * 1024
SUPERVISED = "LOOPKIT_AGENT_SESSION"  # agentsession.SESSION_ENV: set under `loopkit run`
DRIVEN = ("LOOPKIT_AGENT_DRIVER", "stream-json")  # agentsession.DRIVER_ENV, DRIVER


class Dialect:
    """How one agent's tool-call hook speaks (this class: Claude Code's PreToolUse).

    ``shell``/``files``: the agent's names of the tools a default rule can hold, read on
    the fast path; :meth:`calls`: the call in the rules' vocabulary (Bash, Write, …), one
    entry per thing to check; :meth:`answer`: the agent's JSON for an allow or a deny.
    Codex's and Gemini CLI's are in :mod:`~loopkit.hooks.codex`, :mod:`~loopkit.hooks.gemini`.
    """

    agent = "Claude"
    event = "PreToolUse"
    shell: tuple[str, ...] = ("Bash",)
    files: tuple[str, ...] = ("Write", "Edit", "MultiEdit", "NotebookEdit")
    # Words that make a shell command write files by name (Codex applies a patch run through
    # the shell, ``apply_patch <<'EOF' …``): such a command is read for protected paths too.
    shell_writes: tuple[bytes, ...] = ()

    def gated_tool(self, raw: bytes) -> str | None:
        """What ``re.search(rb'"tool_name"\\s*:\\s*"(Bash|Write|…)"', raw)`` finds in a text
        that holds the key once (:func:`_surely_ungated` parses any other): the tool, when it
        is one of :attr:`shell` or :attr:`files` — read without ``re`` (it costs a third of
        the hook's start). :data:`_PARSE_IT` when its blanks are too many to read here."""
        start = _string_of(raw, b'"tool_name"')
        if start is None or start == _PARSE:
            return None if start is None else _PARSE_IT
        close = raw.find(b'"', start)
        names = {name.encode() for name in (*self.shell, *self.files)}
        return raw[start:close].decode() if close >= 0 and raw[start:close] in names else None

    def calls(self, tool_name: str, tool_input: Any) -> list[tuple[str, Any]]:
        return [(tool_name, tool_input)]

    def shown(self, tool_name: str, tool_input: Any, show: Shower) -> list[str]:
        """The call as the human sees it (masked): ``show`` is the matched path's
        (:func:`loopkit.hooks.approve.shown_call`), handed down so this, loaded for every
        call, loads none of it."""
        return show(tool_name, tool_input)

    def answer(self, decision: str, reason: str) -> dict[str, Any] | None:
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        }


def deny_on_error(message: str) -> int:
    try:
        sys.stderr.write(f"loopkit: {message}; the call is denied\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # nowhere to say it: the exit still denies
    return 2


# With the default rules, a call can only match if one of these is in it. Every tool a
# default rule names (the dialect's ``gated_tool``), and a word each default Bash rule needs
# at the start of a word (the rules' own :data:`~loopkit.hooks.rules.WORDS`; a prefix is
# enough: `rmdir` is read too), or a protected path's. Each is read without ``re`` (its import
# is a third of the hook's start), exactly as the expression in its comment would.
_BASH_WORDS = tuple(sorted({w.lower().encode() for ws in WORDS.values() for w in ws}))
# (?i)\.env|\.pem|\.key|migrations: what each default protect glob needs, its wildcards off
_PATH_WORDS = tuple(glob.strip("*/").lower().encode() for glob in DEFAULT_PROTECT)
_SPACE = b" \t\n\r\f\v"  # \s in a bytes expression
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")  # \w
# A text with more keys or words than this read in Python is parsed instead: the scan stays a
# fraction of a millisecond, whatever the call holds.
_MANY = 64
_PARSE_IT = "\0parse"  # gated_tool's "parse it": no tool has this name
_PARSE = -1  # _string_of's


def _string_of(raw: bytes, key: bytes) -> int | None:
    """Where the string starts (just past its opening quote) after the first
    ``key\\s*:\\s*"`` in ``raw``; None when the key is not there or is not followed by a
    string; :data:`_PARSE` — parse it — past a run of :data:`_MANY` blanks."""
    at = raw.find(key)
    if at < 0:
        return None
    colon = _skip_space(raw, at + len(key))
    if colon < 0:
        return _PARSE
    if raw[colon : colon + 1] != b":":
        return None
    quote = _skip_space(raw, colon + 1)
    if quote < 0:
        return _PARSE
    return quote + 1 if raw[quote : quote + 1] == b'"' else None


def _skip_space(raw: bytes, at: int) -> int:
    """Past the \\s* at ``at``; -1 — parse it — for a run longer than :data:`_MANY`."""
    window = raw[at : at + _MANY + 1]
    rest = window.lstrip(_SPACE)
    if not rest and len(window) > _MANY:
        return -1
    return at + len(window) - len(rest)


def _names_a_command_word(given: bytes, words: tuple[bytes, ...] = _BASH_WORDS) -> bool:
    """``re.search(rb"(?i)\\b(?:rm|find|…)", given)``: one of ``words`` at the start of a
    word (each starts with a letter, so \\b is: nothing or a non-word byte before). Past
    :data:`_MANY` of them inside other words, True: parse it."""
    folded = given.lower()  # ASCII only, as a bytes expression's (?i)
    inside = 0
    for word in words:
        at = folded.find(word)
        while at >= 0:
            if at == 0 or folded[at - 1] not in _WORD:
                return True
            inside += 1
            if inside > _MANY:
                return True
            at = folded.find(word, at + 1)
    return False


# Under `loopkit run`, what a shell command needs to change loopkit's own files
# (:mod:`~loopkit.hooks.guard`): their names, a glob, a redirection to a file, or a program
# that writes the files it is given (through a symbolic link too).
_OWN_WORDS = (b"loopkit", b".claude", b".codex", b".gemini", b"requests", b"blocked")
_WRITERS = tuple(sorted(w.encode() for w in WRITERS))  # the shell reader's, as bytes
_HARMLESS_REDIRECTS = (b"&1", b"&2", b"&-", b"/dev/null")  # after `>`, blanks skipped


def _may_write_own(command: bytes, blocked: str) -> bool:
    """Whether the (lower-case, unquoted) command could write one of loopkit's own files."""
    names = (*_OWN_WORDS, os.path.basename(blocked).lower().encode())
    if any(name in command for name in names):
        return True
    if b"*" in command or b"?" in command or b"[" in command:
        return True
    at = command.find(b">")
    while at >= 0:
        rest = command[at + 1 :].lstrip(b" \t>|")
        if not rest.startswith(_HARMLESS_REDIRECTS):
            return True
        at = command.find(b">", at + 1)
    return _names_a_command_word(command, _WRITERS)


def _splices(command: bytes) -> bool:
    """Whether an expansion could join two parts of a word: ``r${x}m``, ``$x'm'``,
    ``'r'$x``, ``r$@m`` are ``rm`` for some ``x`` — an expansion is read on its bytes only
    when it is a word of its own (blanks, ``;``, ``|``, ``&``, parentheses or a redirection
    on both sides; ``=`` before it: an assignment's value). A command substitution
    (``$(…)``, a backquote) is always parsed. Past :data:`_MANY` expansions, True: parse it."""
    if b"`" in command:
        return True
    at, seen = command.find(b"$"), 0
    while at >= 0:
        seen += 1
        if seen > _MANY or (at > 0 and command[at - 1] not in _ALONE_BEFORE):
            return True
        after = command[at + 1 : at + 2]
        if after == b"(":
            return True
        if after == b"{":
            close = command.find(b"}", at)
            end = close + 1 if close >= 0 else len(command)
        elif after and after in b"@*#?$!-0123456789":
            end = at + 2
        else:
            end = at + 1
            while end < len(command) and command[end] in _WORD:
                end += 1
        if end < len(command) and command[end] not in _ALONE_AFTER:
            return True
        at = command.find(b"$", end)
    return False


_ALONE_BEFORE = frozenset(b" \t\n;|&(<>=")  # what may stand before a word of its own
_ALONE_AFTER = frozenset(b" \t\n;|&)<>")  # … and after it


def _surely_ungated(raw: bytes, explicit: str | None, dialect: Dialect | None = None) -> bool:
    """True when no default rule can match ``raw`` and the workspace's ``loopkit.toml``
    loads with no ``[gate]`` of its own — decided without parsing the JSON (the common
    call's whole cost is start-up). Any doubt (an escape sequence, a session folder other
    than ours, a config not known to load) says False: parse it."""
    dialect = dialect or CLAUDE
    if b"\\" in raw:
        return False
    if raw.count(b'"tool_name"') > 1 or raw.count(b'"cwd"') > 1:
        return False  # a key twice, or nested: json.loads keeps the last, a scan sees them all
    supervised = bool(os.environ.get(SUPERVISED))
    if b"AskUserQuestion" in raw and supervised:
        return False  # Claude's own question, asked as loopkit's (hooks.question)
    named = explicit if explicit is not None else os.environ.get("LOOPKIT_WORKSPACE", "").strip()
    if named and not os.path.isabs(named):
        return False  # relative to the session's folder, which only the JSON says
    if named:
        # -C or LOOPKIT_WORKSPACE (under `loopkit run`) names the workspace, wherever the
        # session's folder is.
        workspace = discover.find_workspace(explicit)  # -C, else the variable
    else:
        here = os.getcwd()
        # re.search(rb'"cwd"\s*:\s*"' + re.escape(os.fsencode(here)) + rb'"', raw)
        quoted = os.fsencode(here) + b'"'
        start = _string_of(raw, b'"cwd"')
        if start is None or start == _PARSE or not raw.startswith(quoted, start):
            return False
        workspace = discover.find_workspace(None, cwd=here)
    blocked = defaults_hold(workspace)
    if blocked is None:
        return False  # a [gate] of its own, or a loopkit.toml not known to load
    if supervised and not _folder_unguarded(raw, workspace, blocked):
        return False  # the session works inside loopkit's own files: a bare name is theirs
    tool = dialect.gated_tool(raw)
    if tool is None:
        return True
    if tool == _PARSE_IT:
        return False
    if tool not in dialect.shell:
        # The whole call, the session's folder too: a relative path is joined onto it
        # (``0002.sql`` written in ``…/migrations`` is a protected file).
        folded = raw.lower()
        if any(word in folded for word in _PATH_WORDS):
            return False
        return not supervised or _own_file_untouched(raw, workspace, blocked)
    # The rules read the command as the shell does, where a non-ASCII letter can match an
    # ASCII one case-insensitively ("ſ" is an "s"): only ASCII is decided on its bytes. The
    # shell drops single quotes (r''m is rm; a double quote or a backslash is parsed, above),
    # and expands a brace list ({r,}m is rm r).
    given = raw.split(b'"tool_input"', 1)[-1]
    if any(word in given for word in dialect.shell_writes):
        return False  # a patch through the shell: its files are read (the dialect's calls)
    if not given.isascii():
        return False
    folded = given.lower().replace(b"'", b"")
    start = _string_of(given, b'"command"')
    if start is None or start == _PARSE:
        return False
    command = given[start : given.find(b'"', start)]  # no backslash: it ends at the quote
    if (b"{" in command and b"," in command) or _splices(command):
        return False
    if any(word in folded for word in _PATH_WORDS):
        return False  # a protected path: its writes by the shell are gated too
    own = supervised and _may_write_own(folded, blocked)
    if own and not _own_files_untouched(raw, command, workspace, blocked):
        return False
    return not _names_a_command_word(folded)


_OWN_CHECKED = 4096  # bytes of a command the fast path reads for loopkit's own files
_PATH_KEYS = (b'"file_path"', b'"notebook_path"')  # the file tools' (Codex's patch: parsed)


def _folder_unguarded(raw: bytes, workspace: str, blocked: str) -> bool:
    """Under ``loopkit run``: True when the session's folder, read off the call, is none of
    loopkit's own folders and inside none (``cd .loopkit`` persists between Bash calls, and
    then ``touch allow.toml`` names no loopkit file by its words)."""
    at = _string_of(raw, b'"cwd"')
    if at is None or at == _PARSE:
        return False
    cwd = raw[at : raw.find(b'"', at)].decode()
    return Guard(workspace, blocked).path(cwd, cwd) is None


def _own_file_untouched(raw: bytes, workspace: str, blocked: str) -> bool:
    """A file tool's call under ``loopkit run``: True when the one path it names, read off
    the call by hand, is none of loopkit's own files (:mod:`~loopkit.hooks.guard`, links
    followed, as the full path judges it)."""
    keys = [key for key in _PATH_KEYS if key in raw]
    cwd_at = _string_of(raw, b'"cwd"')
    if len(keys) != 1 or raw.count(keys[0]) != 1 or cwd_at is None or cwd_at == _PARSE:
        return False
    at = _string_of(raw, keys[0])
    if at is None or at == _PARSE:
        return False
    path = raw[at : raw.find(b'"', at)].decode()
    cwd = raw[cwd_at : raw.find(b'"', cwd_at)].decode()
    return bool(path) and Guard(workspace, blocked).path(path, cwd) is None


def _own_files_untouched(raw: bytes, command: bytes, workspace: str, blocked: str) -> bool:
    """The guard's own answer (:mod:`~loopkit.hooks.guard`, as the full path gives it) for a
    short command whose text and folder are read off the call by hand (it holds no
    backslash, so the JSON strings are the text): True when it writes none of loopkit's
    files. No ``re``, no ``json``: most commands an agent runs under ``loopkit run`` write a
    file or redirect, and the full path costs twice the hook's start."""
    start = _string_of(raw, b'"cwd"')
    if start is None or start == _PARSE or len(command) > _OWN_CHECKED:
        return False
    cwd = raw[start : raw.find(b'"', start)].decode()
    text = command.decode()
    try:
        reading = understand(text, cwd=cwd, starts=frozenset())
    except Unreadable:
        return False
    return Guard(workspace, blocked).command(reading, text) is None


def main(explicit: str | None = None, dialect: Dialect | None = None) -> int:
    """The hook's exit: 0 — no output (the call goes ahead) or Claude Code's decision JSON on
    stdout — or 2, denied, with one line on stderr. Whatever goes wrong, a bug included,
    denies: Claude Code's hooks reference makes any other exit (1 for a traceback) a
    non-blocking error, and the call would run."""
    dialect = dialect or CLAUDE
    try:
        return _main(explicit, dialect)
    except BaseException as exc:  # even KeyboardInterrupt: exit 2, never 1
        _quiet_stdout()
        return deny_on_error(f"{dialect.event} hook failed ({type(exc).__name__}: {exc})")


def _quiet_stdout() -> None:
    """Drop what could not be written to stdout: flushing it again at exit would fail, and
    Python would exit 120 instead of 2."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def _main(explicit: str | None, dialect: Dialect) -> int:
    raw = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        return deny_on_error(
            f"{dialect.event} hook: the call is over {MAX_INPUT >> 20} MiB, more than the gate "
            "reads"
        )
    try:
        if _surely_ungated(raw, explicit, dialect):
            return 0
    except (OSError, discover.NotAFolder):
        pass  # the full path below says what is wrong
    from loopkit.hooks import gatecall  # the matched path: json, the config, the store

    return gatecall.judge(raw, explicit, dialect)


CLAUDE = Dialect()
