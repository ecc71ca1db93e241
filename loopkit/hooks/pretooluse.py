"""``loopkit hook claude pretooluse``: Claude Code's PreToolUse hook (SPEC section 12).

It runs before every tool call, so the path of a call that surely matches no rule imports
only loopkit's own standard-library helpers (``discover``, :mod:`~loopkit.hooks.rules`) — no
``re``, ``typing`` or ``json``: its scans are written out by hand — and parses ``loopkit.toml``
only when it may hold a gate table (:func:`may_hold_gate`): no output, exit 0, about as fast as
``python -c pass``. A match goes to
:mod:`~loopkit.hooks.approve`, which asks for an approval bound to this exact call.
Anything that goes wrong on a matched call, on input that cannot be read (which could hide
one), or anywhere before the call is known to be ungated — a bug included — denies it (exit
2, one line on stderr): a broken gate never lets a P0 call through. Claude Code takes any
other exit, 1 for a traceback or 127 for a hook it cannot find, for "proceed".
"""

from __future__ import annotations

import os
import sys

from loopkit import discover
from loopkit.hooks.rules import WORDS, Rules, match

TYPE_CHECKING = False  # typing costs ~3 ms of a start of ~20: mypy reads the name as its own
if TYPE_CHECKING:
    from typing import Any

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

    def shown(self, tool_name: str, tool_input: Any) -> list[str]:
        """The call as the human sees it (masked)."""
        from loopkit.hooks.approve import shown_call

        return shown_call(tool_name, tool_input)

    def answer(self, decision: str, reason: str) -> dict[str, Any] | None:
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": reason,
            }
        }


def _deny_on_error(message: str) -> int:
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
_PATH_WORDS = (b".env", b".pem", b".key", b"migrations")  # (?i)\.env|\.pem|\.key|migrations
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


def _names_a_command_word(given: bytes) -> bool:
    """``re.search(rb"(?i)\\b(?:rm|find|…)", given)``: a word of :data:`_BASH_WORDS` at the
    start of a word (each starts with a letter, so \\b is: nothing or a non-word byte before).
    Past :data:`_MANY` of them inside other words, True: parse it."""
    folded = given.lower()  # ASCII only, as a bytes expression's (?i)
    inside = 0
    for word in _BASH_WORDS:
        at = folded.find(word)
        while at >= 0:
            if at == 0 or folded[at - 1] not in _WORD:
                return True
            inside += 1
            if inside > _MANY:
                return True
            at = folded.find(word, at + 1)
    return False


def _surely_ungated(raw: bytes, explicit: str | None, dialect: Dialect | None = None) -> bool:
    """True when no default rule can match ``raw`` and the workspace has no ``[gate]`` of its
    own — decided without parsing the JSON (the common call's whole cost is start-up). Any
    doubt (an escape sequence, a session folder other than ours) says False: parse it."""
    dialect = dialect or CLAUDE
    if b"\\" in raw:
        return False
    if raw.count(b'"tool_name"') > 1 or raw.count(b'"cwd"') > 1:
        return False  # a key twice, or nested: json.loads keeps the last, a scan sees them all
    if b"AskUserQuestion" in raw and os.environ.get(SUPERVISED):
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
    if may_hold_gate(workspace):
        return False
    tool = dialect.gated_tool(raw)
    if tool is None:
        return True
    if tool == _PARSE_IT:
        return False
    given = raw.split(b'"tool_input"', 1)[-1]
    if tool in dialect.shell and any(word in given for word in dialect.shell_writes):
        return False  # a patch through the shell: its files are read (the dialect's calls)
    if tool not in dialect.shell:
        # The whole call, the session's folder too: a relative path is joined onto it
        # (``0002.sql`` written in ``…/migrations`` is a protected file).
        folded = raw.lower()
        return not any(word in folded for word in _PATH_WORDS)
    # The rules read the command as text, where a non-ASCII letter can match an ASCII one
    # case-insensitively ("ſ" is an "s"): only ASCII is decided on its bytes.
    return given.isascii() and not _names_a_command_word(given)


SCAN_LIMIT = 1 << 20
# Every valid TOML spelling of a key named gate holds the word itself ([gate], [ "gate" ],
# gate.rules, gate = {…}, 'gate') unless a basic string spells a letter as an escape.
_MAY_NAME_GATE = (b"gate", b"\\u", b"\\U", b"\\x")  # gate|\\[uUx]


def may_hold_gate(workspace: str) -> bool:
    """False only when ``loopkit.toml`` surely has no gate table: there is none, or its text
    neither says ``gate`` nor holds an escape that could spell a letter of it (``\\u0067``).
    Anything else — a file too long to scan, one that cannot be read, something other than
    a file — says True: parse it, and :func:`load_rules` (``config.load``) says what is wrong.
    """
    try:
        fd = os.open(os.path.join(workspace, "loopkit.toml"), os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        if not _regular(fd):
            return True
        text = b""
        while len(text) <= SCAN_LIMIT and (chunk := os.read(fd, SCAN_LIMIT + 1 - len(text))):
            text += chunk  # a read may return less than asked (FUSE, NFS)
    finally:
        os.close(fd)
    return len(text) > SCAN_LIMIT or any(word in text for word in _MAY_NAME_GATE)


def load_rules(workspace: str) -> Rules:
    """``[gate]`` from the workspace's loopkit.toml (any valid spelling), else the defaults.

    A file that does not load keeps the valid part of its table — a typo in ``[loop]`` does
    not drop the user's own rules — and remembers why (said on a match, which is denied).
    A table that is itself unusable leaves the defaults.
    """
    if not may_hold_gate(workspace):
        return Rules.build()
    from pathlib import Path

    from loopkit import config
    from loopkit.errors import ConfigError

    problems: tuple[str, ...] = ()
    try:
        loaded = config.load(Path(workspace))
    except ConfigError as exc:
        problems = (str(exc),)
        loaded = config.load(Path(workspace), lenient=True)
    gate = loaded.gate
    rules = list(gate.rules) if gate.rules is not None else None
    protect = list(gate.protect) if gate.protect is not None else None
    return Rules.build(rules, protect, gate.extend_defaults, problems=problems)


def _regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


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
        return _deny_on_error(f"{dialect.event} hook failed ({type(exc).__name__}: {exc})")


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
    raw = sys.stdin.buffer.read(MAX_INPUT)
    try:
        if _surely_ungated(raw, explicit, dialect):
            return 0
    except (OSError, discover.NotAFolder):
        pass  # the full path below says what is wrong
    import json

    try:
        event = json.loads(raw)
        tool_name = event["tool_name"]
        tool_input = event.get("tool_input", {})
        cwd = event.get("cwd") or os.getcwd()
        if not isinstance(tool_name, str) or not isinstance(cwd, str):
            raise TypeError("tool_name and cwd must be strings")
    except (ValueError, KeyError, TypeError) as exc:
        return _deny_on_error(f"{dialect.event} hook: cannot read the call from stdin ({exc})")
    try:
        workspace = discover.find_workspace(explicit, cwd=cwd)
    except discover.NotAFolder as exc:
        return _deny_on_error(str(exc))
    driven = os.environ.get(DRIVEN[0]) == DRIVEN[1]  # the supervisor asks Claude's questions
    if tool_name == "AskUserQuestion" and os.environ.get(SUPERVISED) and not driven:
        try:
            from loopkit.hooks.question import decide as asked

            answer = asked(workspace, {**event, "cwd": cwd})
        except Exception as exc:
            return _deny_on_error(f"PreToolUse hook could not ask Claude's question: {exc}")
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
            return 0
    rules = load_rules(workspace)
    hit = next(
        (h for name, given in dialect.calls(tool_name, tool_input)
         if (h := match(rules, name, given, cwd)) is not None),
        None,
    )  # fmt: skip
    if hit is None:
        return 0
    try:
        from loopkit.hooks.approve import verdict

        if rules.problems:
            return _deny_on_error(f"{rules.problems[0]} (fix loopkit.toml to let gated calls ask)")
        shown = dialect.shown(tool_name, tool_input)
        decision = dialect.answer(*verdict(workspace, event, hit, agent=dialect.agent, shown=shown))
    except Exception as exc:  # any failure on a matched call denies it
        return _deny_on_error(f"{dialect.event} hook failed on a gated call: {exc}")
    if decision is None:
        return 0
    sys.stdout.write(json.dumps(decision) + "\n")
    sys.stdout.flush()  # a decision that cannot be given is a failure, and denies
    return 0


CLAUDE = Dialect()
