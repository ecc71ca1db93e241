"""Which tool calls wait for a human: ``[gate] rules`` and ``[gate] protect``.

Standard library only, and only ``re``, ``fnmatch`` and ``os.path`` at that: this module is
imported for every tool call Claude Code makes, so ``re`` and ``fnmatch`` are imported only
when a call is matched (the fast path of :mod:`~loopkit.hooks.pretooluse` needs neither).

- ``rules``: regular expressions searched in a Bash command (case-insensitive), or
  ``tool:<glob>`` for a tool by name (``tool:mcp__*__delete_*``). Set, they replace the
  defaults; ``extend_defaults`` keeps them and adds.
- ``protect``: path globs for Write / Edit / MultiEdit / NotebookEdit. A glob without a
  ``/`` matches a file's name (``.env*``); with one, its path relative to the session's folder
  (``**/migrations/**``).
"""

from __future__ import annotations

import os.path

# The default rules, by the destructive class they hold (SPEC section 17), each with a label
# shown to the human instead of the expression. Fragments, so that a rule reads as a command.
#
# Each rule looks at one simple command (the text between ; & | and newlines): the first
# word that names the verb in it, then whether the rest of that command holds the flag. The
# first is enough — the rest after it holds the rest after any later one — and an atomic
# group (?>…) commits to it, so a rule reads each character a bounded number of times: a
# command of ten thousand `git push` words is checked in milliseconds, not minutes (a hook
# that runs past Claude Code's timeout would let the call through).
_SEG = r"[^;&|\n]"  # a character of the same simple command
_ARGS = rf"(?:{_SEG}*?\s)?"  # any words between, within that command
_END = r"""(?=[\s;&|)'"]|$)"""  # the end of a word


def _first(*words: str, seg: str = _SEG) -> str:
    """From the start of a simple command, the first ``words[0]`` in it, then the first
    ``words[1]`` after that, …: committed to, never tried again at a later one."""
    start = r"(?:^|(?<=[;&|\n]))" if seg == _SEG else r"(?:^|(?<=[;&]))"
    return start + "".join(rf"(?>{seg}*?{word})" for word in words)


def _flag(short: str, long: str) -> str:
    """A word that is a cluster of short options holding ``short`` (``-rf``), or a long
    option starting with ``long`` (an unambiguous prefix is what getopt_long accepts)."""
    return rf"(?:-[a-z0-9]*{short}[a-z0-9]*|--{long}[a-z-]*(?:=[^\s;&|]*)?){_END}"


def _has(*flags: str) -> str:
    """Every one of ``flags`` somewhere later in the same command, in any order."""
    return "".join(rf"(?={_ARGS}{flag})" for flag in flags)


def _git(verb: str) -> str:
    """git, any options before the verb (-C DIR, -c k=v, --git-dir=…), the verb."""
    return _first(r"\bgit\s", rf"(?<=\s){verb}\b")


_SHELL = r"(?:\b(?:(?:ba|z|da|k|fi)?sh|source|eval|python[0-9.]*|perl|ruby|node)|(?<![\w/.-])\.)"
_FETCH = r"(?:curl|wget)\b"
# (label, words — a match holds one of them at the start of a word —, expression)
DEFAULTS: tuple[tuple[str, str, str], ...] = (
    # deleting data
    ("rm -r -f", "rm", _first(r"\brm\s") + _has(_flag("r", "r"), _flag("f", "f"))),
    ("find -delete", "find", _first(r"\bfind\s") + _has(r"-(?:delete|exec(?:dir)?\s+rm)\b")),
    ("dd of=/dev/…", "dd", _first(r"\bdd\s")
     + _has(r"""of=["']?/dev/(?!null\b|zero\b|stdout\b|stderr\b|fd/)""")),
    ("mkfs", "mkfs", r"(?<![\w.-])mkfs(?:\.\w+)?(?=\s|$)"),
    ("shred", "shred", r"(?<![\w.-])shred\s"),
    ("SQL DROP", "drop", r"\bdrop\s+(?:table|database|schema|view|index|keyspace|collection)\b"),
    ("SQL TRUNCATE", "truncate", r"\btruncate\s+(?!-)"),  # not coreutils' truncate -s
    # up to the statement's end, or the next DELETE (which is looked at on its own)
    ("SQL DELETE without WHERE", "delete",
     r"""\bdelete\s+from\s(?:(?!\b(?:where|delete)\b)[^;'"])*(?:[;'"]|$)"""),
    ("aws s3 rm --recursive", "aws",
     _first(r"\baws\s", r"(?<=\s)s3\s+rm\s") + _has("--recursive" + _END)
     + "|" + _first(r"\baws\s", r"(?<=\s)s3\s+rb\s") + _has("--force" + _END)),
    ("gsutil rm -r", "gsutil gcloud",
     _first(r"\b(?:gsutil|gcloud\s+storage)\s", r"(?<=\s)rm\s") + _has(_flag("r", "recursive"))),
    # rewriting shared history
    ("git push --force / --delete / +ref", "push", _git("push")
     + rf"""(?={_ARGS}(?:{_flag("[fd]", "(?:for|de|mi|pru)")}|["']?[+:][^\s:]))"""),
    ("git reset --hard", "reset", _git("reset") + _has("--hard" + _END)),
    ("git clean -f", "clean", _git("clean") + _has(_flag("f", "force"))),
    ("git branch -D", "branch", _git("branch") + rf"(?:(?={_ARGS}-[a-z]*(?-i:D))"
     + rf"|{_has(_flag('(?-i:d)', 'delete'), _flag('f', 'force'))})"),
    # publishing and sending
    ("publish a package", "publish upload push",
     _first(r"\b(?:npm|pnpm|yarn|cargo|poetry|uv|hatch|flit)\s") + _has(r"publish\b")
     + "|" + _first(r"\btwine\s") + _has(r"upload\b") + r"|\bgem\s+push\b"),
    ("gh release create", "release",
     _first(r"\bgh\s") + _has(r"release\s+(?:create|upload|delete)\b")),
    ("sendmail / mail", "sendmail mail mutt msmtp", r"\b(?:sendmail|mailx|mutt|msmtp)\b"
     r"|(?:^|[;&|(`{\n]|\b(?:sudo|exec|xargs|env|nohup|time|then|do)\s)\s*"
     r"(?:\w+=[^\s;&|]*\s+)*(?:[^\s;&|]*/)?mail\s"),
    # infrastructure
    ("terraform destroy", "terraform tofu", _first(r"\b(?:terraform|tofu)\s")
     + "(?:" + _has(r"destroy\b") + "|" + _has(r"apply\b", r"--?destroy\b") + ")"),
    ("kubectl delete", "kubectl", _first(r"\bkubectl\s") + _has(r"delete\b")),
    ("helm uninstall", "helm", _first(r"\bhelm\s") + _has(r"(?:uninstall|delete|del|un)\b")),
    # running remote code
    ("curl | sh", "curl wget", _first(rf"\b{_FETCH}", seg="[^;&]")
     # the shell after the pipe: behind sudo (options, with or without a value), env
     # (with assignments), a path (/bin/sh, /usr/bin/env bash)
     + r"(?=[^;&]*\|\s*(?:sudo(?:\s+-[^\s;&|]+(?:\s+(?!-)[^\s;&|]+(?=\s))?)*\s+)?"
     r"(?:(?:[^\s;&|]*/)?env(?:\s+\w+=[^\s;&|]*)*\s+)?(?:[^\s;&|]*/)?"
     r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node)\b)"),
    ("sh -c \"$(curl …)\" / sh <(curl …)", "curl wget",
     _first(_SHELL + r"\s") + rf"(?={_SEG}*?(?:\$\(|<\(|`)\s*{_FETCH})"),
)  # fmt: skip
DEFAULT_RULES = tuple(pattern for _, _, pattern in DEFAULTS)
LABELS = {pattern: label for label, _, pattern in DEFAULTS}
# Compiling every default costs ~15 ms, more than the rest of the hook: an expression is
# compiled only for a command that holds one of its words (the fast path's scan reads them).
WORDS = {pattern: tuple(words.split()) for _, words, pattern in DEFAULTS}
DEFAULT_PROTECT = (".env*", "*.pem", "*.key", "**/migrations/**")
FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}  # fmt: skip


class Rules:
    """The rules of one workspace: ``commands``, expressions (compiled when first searched);
    ``problems``: why its ``[gate]`` table was not usable (a matched call is denied saying
    so)."""

    __slots__ = ("commands", "problems", "protect", "tools")

    def __init__(
        self,
        commands: tuple[str, ...],
        tools: tuple[str, ...] = (),
        protect: tuple[str, ...] = DEFAULT_PROTECT,
        problems: tuple[str, ...] = (),
    ) -> None:
        self.commands = commands
        self.tools = tools
        self.protect = protect
        self.problems = problems

    @classmethod
    def build(
        cls,
        rules: list[str] | None = None,
        protect: list[str] | None = None,
        extend: bool = False,
        problems: tuple[str, ...] = (),
    ) -> Rules:
        patterns = list(DEFAULT_RULES) if rules is None or extend else []
        patterns += list(rules or [])
        commands = tuple(p for p in patterns if not p.startswith("tool:"))
        tools = tuple(p[5:] for p in patterns if p.startswith("tool:"))
        chosen = DEFAULT_PROTECT if protect is None else tuple(protect)
        return cls(commands, tools, chosen, problems)


def _protected(path: str, cwd: str, globs: tuple[str, ...]) -> str | None:
    import fnmatch

    name = os.path.basename(path)
    full = os.path.normpath(os.path.join(cwd, path))
    relative = os.path.relpath(full, cwd) if cwd else path
    for glob in globs:
        if "/" not in glob:
            if fnmatch.fnmatchcase(name, glob):
                return glob
            continue
        pattern = glob.replace("**/", "*/").replace("/**", "/*")
        for candidate in ("/" + relative.lstrip("/"), "/" + full.lstrip("/")):
            if fnmatch.fnmatchcase(candidate, "*/" + pattern.lstrip("*/")):
                return glob
    return None


def match(rules: Rules, tool_name: str, tool_input: object, cwd: str) -> str | None:
    """The rule the call meets (shown to the human), or None: the call goes ahead."""
    import fnmatch
    import re

    for glob in rules.tools:
        if fnmatch.fnmatchcase(tool_name, glob):
            return f"tool:{glob}"
    if not isinstance(tool_input, dict):
        return None
    if tool_name == "Bash":
        command = tool_input.get("command")
        if isinstance(command, str):
            # ASCII only: a non-ASCII letter can match an ASCII one case-insensitively.
            folded = command.lower() if command.isascii() else None
            for pattern in rules.commands:
                words = WORDS.get(pattern)
                if words and folded is not None and not any(w in folded for w in words):
                    continue
                if re.search(pattern, command, re.IGNORECASE):
                    return LABELS.get(pattern, pattern)
        return None
    key = FILE_TOOLS.get(tool_name)
    path = tool_input.get(key) if key else None
    if isinstance(path, str) and path:
        found = _protected(path, cwd, rules.protect)
        return f"protect:{found}" if found else None
    return None
