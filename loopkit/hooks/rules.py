"""Which tool calls wait for a human: ``[gate] rules``, ``[gate] protect`` and, under
``loopkit run``, loopkit's own files (:mod:`~loopkit.hooks.guard`).

Standard library only: this module is imported for every tool call an agent makes, so
``re`` and ``fnmatch`` are imported only when a call is matched (the fast path of
:mod:`~loopkit.hooks.pretooluse` needs neither); the shell reader
(:mod:`~loopkit.hooks.commandline`, itself without ``re``) is loaded with it: the fast path
reads a command that may touch loopkit's own files with it too.

- ``rules``: regular expressions searched in a Bash command (case-insensitive), or
  ``tool:<glob>`` for a tool by name (``tool:mcp__*__delete_*``). Set, they replace the
  defaults; ``extend_defaults`` keeps them and adds. A rule of the user's is searched in
  the command as written and as the shell reads it (:mod:`~loopkit.hooks.commandline`).
- the defaults read the command as the shell does: each looks at a program where it starts
  (:attr:`~loopkit.hooks.commandline.Reading.views`), at a pipeline
  (:attr:`~loopkit.hooks.commandline.Reading.pipes`), or — SQL — at any text of the command,
  comments removed (``DROP/**/TABLE``).
- ``protect``: path globs for Write / Edit / MultiEdit / NotebookEdit, matched without
  regard to case (``server.PEM`` is a ``*.pem``). A glob without a ``/`` matches a file's
  name (``.env*``); with one, its path relative to the session's folder
  (``**/migrations/**``).
"""

from __future__ import annotations

import os.path

from loopkit.hooks.commandline import understand

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.hooks.commandline import Reading
    from loopkit.hooks.guard import Guard

# The default rules, by the destructive class they hold (SPEC sections 17 and 28), each with
# a label shown to the human instead of the expression. Fragments, so that a rule reads as a
# command.
#
# A rule of the "view" kind reads one command from its program on: its words unquoted and
# joined by one space (a blank inside a word is shown as ␣, so it never splits one), the
# program named without its folder, git's long options spelled out. It is anchored at the
# program; what it looks for later is the first such word (an atomic group commits to it),
# so a rule reads each character a bounded number of times: a command of ten thousand
# `git push` words is checked in milliseconds, not minutes.
_ARGS = r"(?:.*?\s)?"  # any words between
_END = r"(?=\s|$)"  # the end of a word


def _then(word: str) -> str:
    """The first ``word`` after the program, committed to."""
    return rf"(?>.*?(?<=\s){word}\b)"


def _flag(short: str, long: str) -> str:
    """A word that is a cluster of short options holding ``short`` (``-rf``), or a long
    option starting with ``long`` (an unambiguous prefix is what getopt_long accepts)."""
    return rf"(?:-[a-z0-9]*{short}[a-z0-9]*|--{long}[a-z-]*(?:=\S*)?){_END}"


def _has(*flags: str) -> str:
    """Every one of ``flags`` somewhere later in the command, in any order."""
    return "".join(rf"(?={_ARGS}{flag})" for flag in flags)


def _git(verb: str) -> str:
    """git, any options before the verb (-C DIR, -c k=v, --git-dir=…), the verb."""
    return r"^git\s" + _then(verb)


_SHELL = r"(?:(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node)"
_GAP = "\u2423"  # commandline.GAP: a blank inside a word
# (label, words — a match holds one of them at the start of a word —, expression)
DEFAULTS: tuple[tuple[str, str, str], ...] = (
    # deleting data
    ("rm -r -f", "rm", r"^rm\s" + _has(_flag("r", "r"), _flag("f", "f"))),
    ("find -delete", "find", r"^find\s" + _has(r"-(?:delete|exec(?:dir)?\s+rm)" + _END)),
    ("dd of=/dev/…", "dd", r"^dd\s" + _has(r"of=/dev/(?!null\b|zero\b|stdout\b|stderr\b|fd/)")),
    ("mkfs", "mkfs", r"^mkfs(?:\.\w+)?" + _END),
    ("shred", "shred", r"^shred\s"),
    ("SQL DROP", "drop", r"\bdrop\s+(?:table|database|schema|view|index|keyspace|collection)\b"),
    ("SQL TRUNCATE", "truncate", r"\btruncate(?>\s+)(?!-)"),  # not coreutils' truncate -s
    # up to the statement's end, or the next DELETE (which is looked at on its own); the
    # texts are unquoted, each argument on its own too
    ("SQL DELETE without WHERE", "delete",
     r"\bdelete\s+from\s(?:(?!\b(?:where|delete)\b)[^;])*(?:;|$)"),
    ("aws s3 rm --recursive", "aws",
     r"^aws\s" + _then(r"s3\s+rm") + _has("--recursive" + _END)
     + r"|^aws\s" + _then(r"s3\s+rb") + _has("--force" + _END)),
    ("gsutil rm -r", "gsutil gcloud",
     r"^(?:gsutil|gcloud)\s" + _then("rm") + _has(_flag("r", "recursive"))),
    # rewriting shared history
    ("git push --force / --delete / +ref", "push", _git("push")
     + rf"(?={_ARGS}(?:{_flag('[fd]', '(?:for|de|mi|pru)')}|[+:][^\s:]))"),
    ("git reset --hard", "reset", _git("reset") + _has("--hard" + _END)),
    ("git clean -f", "clean", _git("clean") + _has(_flag("f", "force"))),
    ("git branch -D", "branch", _git("branch") + rf"(?:(?={_ARGS}-[a-z]*(?-i:D))"
     + rf"|{_has(_flag('(?-i:d)', 'delete'), _flag('f', 'force'))})"),
    # publishing and sending
    ("publish a package", "publish upload push",
     r"^(?:npm|pnpm|yarn|cargo|poetry|uv|hatch|flit)\s" + _has(r"publish\b")
     + r"|^twine\s" + _has(r"upload\b") + r"|^gem\s+push\b"),
    ("gh release create", "release", r"^gh\s" + _has(r"release\s+(?:create|upload|delete)\b")),
    ("sendmail / mail", "sendmail mail mutt msmtp",
     r"^(?:sendmail|mailx|mutt|msmtp)" + _END + r"|^mail\s"),
    # infrastructure
    ("terraform destroy", "terraform tofu", r"^(?:terraform|tofu)\s"
     + "(?:" + _has(r"destroy\b") + "|" + _has(r"apply\b", r"--?destroy\b") + ")"),
    ("kubectl delete", "kubectl", r"^kubectl\s" + _has(r"delete\b")),
    ("helm uninstall", "helm", r"^helm\s" + _has(r"(?:uninstall|delete|del|un)\b")),
    # running remote code: a pipeline from curl or wget into a shell (each stage from its
    # program: `| sudo -E bash`, `| command 'bash'`); a shell running what curl fetched
    ("curl | sh", "curl wget",
     rf"^(?>.*?(?:^|(?<=\|\s))(?:curl|wget){_END})(?:[^|]*\|\s)+?{_SHELL}{_END}"),
    ("sh -c \"$(curl …)\" / sh <(curl …)", "curl wget",
     rf"^(?:{_SHELL}|source|eval|\.)\s" + rf"(?=.*?\$\({_GAP}*(?:curl|wget)\b)"),
)  # fmt: skip
DEFAULT_RULES = tuple(pattern for _, _, pattern in DEFAULTS)
LABELS = {pattern: label for label, _, pattern in DEFAULTS}
# Compiling every default costs ~15 ms, more than the rest of the hook: an expression is
# compiled only for a command that holds one of its words (the fast path's scan reads them).
WORDS = {pattern: tuple(words.split()) for _, words, pattern in DEFAULTS}
# Where a default looks: "view" (a command from its program on, the default), "pipe" (a
# pipeline, each stage from its program), "text" (any text of the command: SQL).
WHERE = {pattern: "text" for label, _, pattern in DEFAULTS if label.startswith("SQL")}
WHERE[DEFAULTS[-2][2]] = "pipe"
# The programs a default rule starts at: a view is made wherever one of them may start.
STARTS = frozenset(
    {
        "rm", "find", "dd", "mkfs", "shred", "aws", "gsutil", "gcloud", "git", "npm", "pnpm",
        "yarn", "cargo", "poetry", "uv", "hatch", "flit", "twine", "gem", "gh", "sendmail", "mail",
        "mailx", "mutt", "msmtp", "terraform", "tofu", "kubectl", "helm", "curl", "wget", "sh",
        "bash", "zsh", "dash", "ksh", "fish", "source", "eval", ".", "python", "perl", "ruby",
        "node"
    }
)  # fmt: skip
DEFAULT_PROTECT = (".env*", "*.pem", "*.key", "**/migrations/**")
FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}  # fmt: skip


class Rules:
    """The rules of one workspace: ``commands``, expressions (compiled when first searched);
    ``tools``, ``protect``: globs; ``guard``: loopkit's own files, under ``loopkit run``;
    ``broken``: why its ``loopkit.toml`` does not load — then every call is denied saying
    so, and no rule is read (SPEC section 28: never the defaults in place of the user's)."""

    __slots__ = ("broken", "commands", "guard", "protect", "tools")

    def __init__(
        self,
        commands: tuple[str, ...],
        tools: tuple[str, ...] = (),
        protect: tuple[str, ...] = DEFAULT_PROTECT,
        *,
        guard: Guard | None = None,
        broken: str | None = None,
    ) -> None:
        self.commands = commands
        self.tools = tools
        self.protect = protect
        self.guard = guard
        self.broken = broken

    @classmethod
    def build(
        cls,
        rules: list[str] | None = None,
        protect: list[str] | None = None,
        extend: bool = False,
        *,
        guard: Guard | None = None,
    ) -> Rules:
        patterns = list(DEFAULT_RULES) if rules is None or extend else []
        patterns += list(rules or [])
        commands = tuple(p for p in patterns if not p.startswith("tool:"))
        tools = tuple(p[5:] for p in patterns if p.startswith("tool:"))
        chosen = DEFAULT_PROTECT if protect is None else tuple(protect)
        return cls(commands, tools, chosen, guard=guard)

    @classmethod
    def unloadable(cls, why: str) -> Rules:
        """The rules of a workspace whose ``loopkit.toml`` does not load: none — every call
        is denied with ``why``."""
        return cls((), broken=why)


def _protected(path: str, cwd: str, globs: tuple[str, ...]) -> str | None:
    """The glob of ``globs`` the path matches, case aside (``server.PEM`` is a ``*.pem``)."""
    import fnmatch

    name = os.path.basename(path).lower()
    full = os.path.normpath(os.path.join(cwd, path))
    relative = os.path.relpath(full, cwd) if cwd else path
    for glob in globs:
        folded = glob.lower()
        if "/" not in folded:
            if fnmatch.fnmatchcase(name, folded):
                return glob
            continue
        pattern = folded.replace("**/", "*/").replace("/**", "/*")
        for candidate in ("/" + relative.lstrip("/"), "/" + full.lstrip("/")):
            if fnmatch.fnmatchcase(candidate.lower(), "*/" + pattern.lstrip("*/")):
                return glob
    return None


def match(
    rules: Rules, tool_name: str, tool_input: object, cwd: str, *, deadline: float | None = None
) -> str | None:
    """The rule the call meets (shown to the human), or None: the call goes ahead.
    ``deadline`` (a ``time.monotonic()`` value): past it, reading a command raises
    :class:`~loopkit.hooks.shell.Unreadable`."""
    import fnmatch

    for glob in rules.tools:
        if fnmatch.fnmatchcase(tool_name, glob):
            return f"tool:{glob}"
    if not isinstance(tool_input, dict):
        return None
    if tool_name == "Bash":
        command = tool_input.get("command")
        if isinstance(command, str):
            return _command(rules, command, cwd, deadline)
        return None
    key = FILE_TOOLS.get(tool_name)
    path = tool_input.get(key) if key else None
    if isinstance(path, str) and path:
        found = _protected(path, cwd, rules.protect)
        if found is not None:
            return f"protect:{found}"
        own = rules.guard.path(path, cwd) if rules.guard is not None else None
        return f"protect:{own}" if own else None
    return None


def _command(rules: Rules, command: str, cwd: str, deadline: float | None) -> str | None:
    import re

    reading = understand(command, cwd=cwd, deadline=deadline, starts=STARTS)
    everything = "\n".join((*reading.texts, *reading.views, *reading.pipes)).lower()
    # ASCII only: a non-ASCII letter can match an ASCII one case-insensitively ("ſ" is "s").
    sieve = everything if everything.isascii() else None
    searched: dict[str | None, list[str]] = {}
    for pattern in rules.commands:
        words = WORDS.get(pattern)
        if words and sieve is not None and not any(w in sieve for w in words):
            continue
        where = WHERE.get(pattern, "view") if pattern in LABELS else None
        if where not in searched:
            searched[where] = _texts(reading, where)
        if any(re.search(pattern, text, re.IGNORECASE) for text in searched[where]):
            return LABELS.get(pattern, pattern)
    for write in reading.writes if rules.protect else ():
        if write.how != "name" and write.word.known and write.cwd is not None:
            found = _protected(write.word.text, write.cwd, rules.protect)
            if found is not None:
                return f"protect:{found}"
    if rules.guard is not None:
        own = rules.guard.command(reading, command)
        if own is not None:
            return f"protect:{own}"
    return None


def _texts(reading: Reading, where: str | None) -> list[str]:
    """What a rule searches: a default where it looks (see :data:`WHERE`); a rule of the
    user's, everything — the command as written first."""
    if where == "view":
        return reading.views
    if where == "pipe":
        return reading.pipes
    if where == "text":  # each command unquoted, each here-document (not the raw line)
        return [variant for text in reading.texts[1:] for variant in _sql(text)]
    return [*reading.texts, *reading.views, *reading.pipes]


def _sql(text: str) -> list[str]:
    """A text, and — when it holds a comment — the text with SQL's comments removed
    (``DROP/**/TABLE``, ``DROP -- x⏎TABLE``) and with only their markers removed (MySQL
    runs what ``/*! … */`` holds)."""
    if "/*" not in text and "--" not in text and "#" not in text:
        return [text]
    import re

    removed = re.sub(r"/\*.*?(?:\*/|$)", " ", text, flags=re.DOTALL)
    removed = re.sub(r"(?:--|#)[^\n]*", " ", removed)
    markers = re.sub(r"/\*!?\d*|\*/", " ", text)
    return [text, removed, markers]
