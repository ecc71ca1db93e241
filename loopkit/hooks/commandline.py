"""What a command line runs, as the gate's rules see it (SPEC section 28).

:func:`understand` reads the command with :mod:`~loopkit.hooks.shell` and then, for every
simple command in it — those in substitutions, in ``sh -c``/``bash -c`` scripts (any
quoting), ``eval``, ``ssh HOST …``, ``su -c``, ``watch`` and shells fed a here-document
included — finds the programs it runs:

- **wrappers are looked through**: ``command``, ``builtin``, ``exec``, ``env`` (its
  assignments and ``-S``), ``nice``, ``nohup``, ``sudo``, ``doas``, ``time``, ``timeout``,
  ``stdbuf``, ``ionice``, ``setsid``, ``xargs``, each with its options (and their values);
- **a program that runs its arguments** is read through too: each argument of a program
  that is not known to treat its arguments as data is read as the possible start of a
  command (``ssh host rm -rf /``, ``kubectl exec pod -- rm -rf /``, ``find … -exec``), and
  an argument holding a whole command line as one (``tmux new 'rm -rf x'``);
- **data stays data**: the arguments of :data:`DATA` programs (``echo``, ``printf``,
  ``grep``, ``git``, ``loopkit``, ``gh`` …) are never read as commands, so ``git commit -m
  "rm -rf is gated now"`` and ``grep -rn 'rm -rf' .`` go ahead.

It hands the rules (:mod:`~loopkit.hooks.rules`) three kinds of text: :attr:`Reading.views`
— each command from each place a program may start, its words unquoted and its program
named without its folder (``/usr/bin/rm`` is ``rm``), git's unique prefixes of long options
spelled out (``--har`` is ``--hard``); :attr:`Reading.pipes` — each pipeline, each stage
from its program; :attr:`Reading.texts` — the command as written and unquoted, where SQL is
looked for (a statement reaches a database from an argument, a pipe or a here-document
alike). And, for loopkit's own files (:mod:`~loopkit.hooks.guard`), :attr:`Reading.writes`:
every path the command writes, moves, removes or changes the mode of.
"""

from __future__ import annotations

import os
import time

from loopkit.hooks.shell import Unreadable, Word, read
from loopkit.wrappers import LONG_VALUES, WRAPPERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from loopkit.hooks.shell import Command, Script

GAP = "\u2423"  # a blank inside one word, as views show it: never a word boundary
MAX_SCRIPTS = 256  # scripts found in arguments, read in all
MAX_NESTING = 8  # scripts within scripts found in arguments
MAX_VIEWS = 16 * 1024 * 1024  # characters of views in all: past it, the command is unreadable

# Programs whose arguments are data, never a command they run.
DATA = frozenset(
    {
        "echo", "printf", "true", "false", "test", "[", "[[", "cat", "tac", "head", "tail", "less",
        "more", "bat", "wc", "sort", "uniq", "cut", "tr", "nl", "fold", "fmt", "column", "diff",
        "cmp", "comm", "grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "mawk",
        "jq", "yq", "ls", "stat", "file", "du", "df", "tree", "basename", "dirname", "realpath",
        "readlink", "pwd", "cd", "pushd", "popd", "touch", "mkdir", "export", "declare", "typeset",
        "local", "readonly", "unset", "alias", "read", "which", "type", "whereis", "man", "help",
        "git", "gh", "loopkit", "curl", "wget", "tee", "cp", "mv", "rm", "ln", "chmod", "chown",
        "chgrp", "install", "rmdir", "unlink", "dd", "truncate", "shred", "md5sum", "sha1sum",
        "sha256sum", "sha512sum", "b2sum", "cksum", "base64", "xxd", "hexdump", "od", "date",
        "sleep", "seq", "mktemp", "printenv", "id", "whoami", "hostname", "uname", "ps", "kill",
        "history"
    }
)  # fmt: skip
SHELLS = frozenset(["sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"])
# programs that run a command line they are given
_SCRIPTED = frozenset(["eval", "watch", "ssh", "su", "runuser", "env"])
# ssh's options that take a value (OpenSSH)
_SSH_VALUES = frozenset("BbcDEeFIiJLlmOoPpQRSWw")
# git: global options that take a separate value, and the destructive long options of the
# verbs the default rules hold (a unique prefix of one is what git's parse-options accepts)
_GIT_VALUES = frozenset(
    {
        "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env",
        "--super-prefix",
    }
)  # fmt: skip
_GIT_LONG = {
    "push": ("force", "force-with-lease", "delete", "mirror", "prune"),
    "reset": ("hard",),
    "clean": ("force",),
    "branch": ("delete", "force"),
}
# what a program writes: all its operands, or its last (cp's destination)
_REMOVES = frozenset(["rm", "unlink", "rmdir", "shred"])
_CHANGES = frozenset(["chmod", "chown", "chgrp", "chattr", "setfacl", "truncate", "tee"])
_COPIES = frozenset(["cp", "install", "ln", "rsync"])
_IN_PLACE = frozenset(["sed", "perl", "ruby", "gawk", "awk", "yq"])
_EDITORS = frozenset(["vi", "vim", "nvim", "ex", "ed", "nano", "emacs", "patch"])
_GIT_WRITES = frozenset(["checkout", "restore", "rm", "mv", "apply"])
# programs that only read what they are given (paths handed to them change nothing)
_READS = DATA - _REMOVES - _CHANGES - _COPIES - _IN_PLACE - {"mv", "dd", "git", "touch", "mkdir"}
# Programs that write the files they are given (or run what does): a command holding one may
# change loopkit's own files under `loopkit run` (the gate's screen reads for these).
WRITERS = (
    _REMOVES
    | _CHANGES
    | _COPIES
    | _IN_PLACE
    | _EDITORS
    | {"mv", "dd", "git", "touch", "mkdir", "find"}
)


class Write:
    """A path a command writes: its word, the folder it is relative to (None: unknown, a
    ``cd`` to a place not known), and ``how``: ``write`` (a file's content), ``remove``
    (removed, moved away or its mode changed: a folder holding loopkit's files counts),
    ``name`` (an argument of a program loopkit does not know: counts when it *is* a
    protected path). ``links``: the write goes through a symbolic link at the path (a
    redirection, ``tee``, ``cp``'s destination, ``chmod``) — not so ``rm``, ``mv``,
    ``sed -i`` (which replace or remove the link itself) or ``git``."""

    __slots__ = ("cwd", "how", "links", "word")

    def __init__(self, word: Word, cwd: str | None, how: str, *, links: bool = True) -> None:
        self.word = word
        self.cwd = cwd
        self.how = how
        self.links = links and how != "name"

    def __repr__(self) -> str:
        return f"Write({self.word.text!r}, {self.how})"


class Reading:
    """The command as the rules read it (see the module docstring)."""

    __slots__ = ("pipes", "texts", "views", "writes")

    def __init__(self) -> None:
        self.views: list[str] = []
        self.pipes: list[str] = []
        self.texts: list[str] = []
        self.writes: list[Write] = []


def base(program: str) -> str:
    """A program as the rules name it: without its folder."""
    return program.rsplit("/", 1)[-1]


def shown(word: str) -> str:
    """A word as a view shows it: its blanks and separators never split it."""
    if not word:
        return "''"
    return "".join(GAP if c in " \t\n\r\f\v;&|" else c for c in word)


def _options(words: list[Word], i: int, values: str, stops: str) -> int | None:
    """Past the options of the wrapper at ``i``: the index of what it runs, or None when
    one of ``stops`` means it runs nothing (``command -v``)."""
    n = len(words)
    i += 1
    while i < n:
        text = words[i].text
        if text == "--":
            return i + 1
        if text.startswith("--") and len(text) > 2:
            name = text.split("=", 1)[0]
            i += 2 if name in LONG_VALUES and "=" not in text else 1
            continue
        if not text.startswith("-") or len(text) < 2:
            return i
        cluster = text[1:]
        if not cluster.replace("-", "").isalnum():
            return i
        if cluster.isdigit():  # nice -10
            i += 1
            continue
        if any(c in stops for c in cluster):
            return None
        i += 1
        for at, c in enumerate(cluster):
            if c in values:
                if at == len(cluster) - 1:
                    i += 1  # the value is the next word
                break  # the rest of the cluster is the value
    return i


def program(words: list[Word], i: int = 0) -> int | None:
    """The index of the program the words from ``i`` run, wrappers looked through; None
    when they run none (``command -v rm``, ``sudo -l``)."""
    n = len(words)
    while i < n:
        name = base(words[i].text)
        if name not in WRAPPERS:
            return i
        values, _, stops = WRAPPERS[name]
        found = _options(words, i, values, stops)
        if found is None:
            return None
        i = found
        if name == "env":
            while i < n and "=" in words[i].text and not words[i].text.startswith("="):
                i += 1  # env NAME=VALUE … command
        elif name == "timeout" and i < n:
            i += 1  # the duration
    return None


def _script_of(words: list[Word], i: int) -> tuple[int, int, str] | None:
    """The command line the program at ``i`` runs from its arguments — a shell's ``-c``,
    ``eval``'s and ``watch``'s words, ``ssh``'s remote command, ``su -c``, ``env -S`` — as
    ``(first, end, text)``: the words it is made of, and its text."""
    name = base(words[i].text)
    if name not in SHELLS and name not in _SCRIPTED:
        return None
    n = len(words)
    at = i + 1

    def joined(start: int) -> tuple[int, int, str] | None:
        return (start, n, " ".join(w.text for w in words[start:])) if start < n else None

    if name in SHELLS:
        while at < n and words[at].text.startswith(("-", "+")) and words[at].text != "--":
            flags = words[at].text
            if "c" in flags[1:] and not flags.startswith("--"):
                return (at + 1, at + 2, words[at + 1].text) if at + 1 < n else None
            at += 2 if flags in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") else 1
        return None
    if name == "eval":
        return joined(at)
    if name == "watch":
        while at < n and words[at].text.startswith("-"):
            at += 2 if words[at].text in ("-n", "--interval") else 1
        return joined(at)
    if name == "ssh":
        while at < n and words[at].text.startswith("-"):
            flag = words[at].text
            at += 2 if len(flag) == 2 and flag[1] in _SSH_VALUES else 1
        return joined(at + 1)  # past the host
    for at in range(i + 1, n):
        text = words[at].text
        if name in ("su", "runuser"):
            if text in ("-c", "--command") and at + 1 < n:
                return at + 1, at + 2, words[at + 1].text
            if text.startswith("--command="):
                return at, at + 1, text.split("=", 1)[1]
        elif text in ("-S", "--split-string"):  # env
            return joined(at + 1)
        elif text.startswith(("-S", "--split-string=")) and len(text) > 2:
            return at, at + 1, text.split("=", 1)[1] if "=" in text else text[2:]
    return None


def _git_spelled_out(words: list[str]) -> list[str]:
    """git's words with the unique prefixes of the held verbs' long options spelled out
    (``--har`` is ``--hard``). A prefix of several is read as the shortest: git itself
    refuses an ambiguous one, so reading it so only holds a command git would not run."""
    at = 1
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in _GIT_VALUES else 1
    if at >= len(words) or words[at] not in _GIT_LONG:
        return words
    long = _GIT_LONG[words[at]]
    out = words[: at + 1]
    for word in words[at + 1 :]:
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            lower = name.lower()
            found = sorted((o for o in long if o.startswith(lower)), key=len)
            if found and lower not in long:
                word = f"--{found[0]}{eq}{value}"
        out.append(word)
    return out


class _Understanding:
    def __init__(
        self,
        env: Mapping[str, str],
        deadline: float | None,
        cwd: str | None,
        starts: frozenset[str] | None,
    ) -> None:
        self.env = env
        self.deadline = deadline
        self.cwd = cwd
        self.starts = starts
        self.reading = Reading()
        self.scripts = 0
        self.room = MAX_VIEWS

    def script(self, script: Script, depth: int) -> None:
        for pipeline in script.pipelines:
            stages = [self.command(command, depth) for command in pipeline]
            if len(stages) > 1:
                self.reading.pipes.append(" | ".join(stages))
            self.fed(pipeline, depth)

    def fed(self, pipeline: list[Command], depth: int) -> None:
        """A shell reading its stdin runs what is piped or written into it: ``cat <<EOF |
        sh``, ``echo 'rm -rf x' | bash``, ``bash <<EOF``."""
        for at, command in enumerate(pipeline):
            words = command.words
            start = program(words)
            if start is None or base(words[start].text) not in SHELLS:
                continue
            if _script_of(words, start) is not None or any(
                not w.text.startswith(("-", "+")) for w in words[start + 1 :]
            ):
                continue  # it runs a script of its own
            for redirect in command.redirects:
                if redirect.body is not None:
                    self.more(redirect.body, depth)
            for before in pipeline[:at]:
                first = program(before.words)
                if first is not None and base(before.words[first].text) in ("echo", "printf"):
                    self.more(" ".join(w.text for w in before.words[first + 1 :]), depth)
                for redirect in before.redirects:
                    if redirect.body is not None:
                        self.more(redirect.body, depth)

    def more(self, text: str, depth: int) -> None:
        """A command line found inside another: read as one (in a subshell of its own)."""
        self.scripts += 1
        if self.scripts > MAX_SCRIPTS:
            raise Unreadable(f"more than {MAX_SCRIPTS} scripts inside the command")
        if depth >= MAX_NESTING:
            raise Unreadable("scripts nested too deep inside the command")
        saved = self.cwd
        self.script(read(text, env=self.env, deadline=self.deadline), depth + 1)
        self.cwd = saved

    def _starts(self, name: str) -> bool:
        """Whether a view from a program of this name could be held by a rule."""
        if self.starts is None:
            return True
        return (
            name in self.starts
            or name.split(".", 1)[0] in self.starts
            or name.rstrip("0123456789.") in self.starts
        )

    def command(self, command: Command, depth: int) -> str:
        """One simple command: its views, what it writes, its text. Returns its pipeline
        stage (from its program on)."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise Unreadable("the command could not be read in the time allowed")
        words = command.words
        scripts: set[int] = set()  # the words read as command lines of their own
        self.redirects(command)
        first = program(words)
        stage = " ".join(shown(w.text) for w in words)
        if first is not None:
            self.writes(words, first)
            stage = self.view(words, first)
            self.reading.views.append(stage)
            self.programs(words, first, scripts, depth)
        # SQL is looked for in the command's words, unquoted — all of them, and each that
        # could hold a statement of its own (a `WHERE` in another is not this one's) — and in
        # its here-documents; a command line read as one is looked at in its own commands.
        kept = [w.text for at, w in enumerate(words) if at not in scripts]
        texts = self.reading.texts
        texts.append(" ".join(kept))
        texts.extend(text for text in kept if any(c in text for c in " \t\n/-#"))
        texts.extend(r.body for r in command.redirects if r.body)
        return stage

    def programs(self, words: list[Word], first: int, scripts: set[int], depth: int) -> None:
        """The views of the programs that may start in the command after its own, and the
        command lines its programs run (read; the words a shell's script is made of into
        ``scripts``)."""
        # A later start of a program already seen in this command adds nothing: its view is
        # the end of the first one's (so the views stay as long as the command, not its
        # square).
        seen = {base(words[first].text)}
        at: int | None = first
        while at is not None and at < len(words):
            start = program(words, at)
            if start is None:
                break
            name = base(words[start].text)
            if name not in seen and self._starts(name):
                seen.add(name)
                self.reading.views.append(self.view(words, start))
            script = _script_of(words, start)
            if script is not None:
                scripts.update(range(script[0], script[1]))
                self.more(script[2], depth)
            if name in DATA:
                break
            word = words[start]
            whole_line = any(c in word.text for c in " \t\n;|&") and word.text.strip()
            if start != first and start not in scripts and whole_line:
                self.more(word.text, depth)  # a whole command line as one argument (or not)
            at = start + 1

    def view(self, words: list[Word], start: int) -> str:
        texts = [w.text for w in words[start:]]
        texts[0] = base(texts[0])
        if texts[0] == "git":
            texts = _git_spelled_out(texts)
        view = " ".join(shown(t) for t in texts)
        self.room -= len(view)
        if self.room < 0:
            raise Unreadable("the command is too long to read in the time allowed")
        return view

    def redirects(self, command: Command) -> None:
        for redirect in command.redirects:
            target = redirect.target
            if target is None or redirect.op in ("<", "<<", "<<-", "<<<", "<&"):
                continue
            if redirect.op == ">&" and (target.text.isdigit() or target.text == "-"):
                continue  # 2>&1: a descriptor, not a file
            self.reading.writes.append(Write(target, self.cwd, "write"))

    def writes(self, words: list[Word], first: int) -> None:
        """The paths the program at ``first`` writes (and ``cd``: where the next look)."""
        name = base(words[first].text)
        operands = [w for w in words[first + 1 :] if not w.text.startswith("-") or w.glob]
        add = self.reading.writes
        if name in ("cd", "pushd"):
            self.cd(operands[0] if operands else None)
        elif name in _REMOVES or name in _CHANGES:
            follows = name not in ("rm", "unlink", "rmdir")
            add += [Write(w, self.cwd, "remove", links=follows) for w in operands]
        elif name == "mv" or name in _COPIES:
            self.copies(name, words[first + 1 :], operands)
        elif name == "dd":
            for word in words[first + 1 :]:
                if word.text.startswith("of="):
                    target = Word()
                    target.text, target.known = word.text[3:], word.known
                    add.append(Write(target, self.cwd, "write"))
        elif name in _IN_PLACE:
            if _in_place(name, [w.text for w in words[first + 1 :]]):
                add += [Write(w, self.cwd, "write", links=False) for w in operands]
        elif name in _EDITORS:
            add += [Write(w, self.cwd, "write", links=False) for w in operands]
        elif name == "find":
            held = ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf")
            if any(w.text in held for w in words[first + 1 :]):
                add += [Write(w, self.cwd, "remove", links=False) for w in operands]
        elif name == "git":
            if any(w.text in _GIT_WRITES for w in operands[:3]):
                add += [Write(w, self.cwd, "remove", links=False) for w in operands]
        elif name not in _READS:
            add += [Write(w, self.cwd, "name") for w in words[first + 1 :]]

    def copies(self, name: str, args: list[Word], operands: list[Word]) -> None:
        """``mv``, ``cp``, ``install``, ``ln``, ``rsync``: the destination is written (a
        folder: each source's name in it); ``mv``'s sources are removed."""
        dest: Word | None = None
        for at, word in enumerate(args):
            if word.text in ("-t", "--target-directory") and at + 1 < len(args):
                dest = args[at + 1]
            elif word.text.startswith("--target-directory="):
                dest = _word(word.text.split("=", 1)[1], word)
        sources = [w for w in operands if w is not dest]
        if dest is None and len(sources) >= 2:
            dest = sources.pop()
        elif dest is None and name == "ln" and sources:
            dest = _word(".", sources[0])  # ln TARGET: a link of that name, here
        add = self.reading.writes
        if name == "mv":
            add += [Write(w, self.cwd, "remove", links=False) for w in sources]
        if dest is None:
            return
        follows = name not in ("mv", "ln")  # cp writes through a link; mv and ln replace it
        add.append(Write(dest, self.cwd, "write", links=follows))
        for source in sources:
            name_there = os.path.basename(source.text.rstrip("/"))
            if name_there in ("", ".", ".."):  # cp -r src/. dest: what it holds, into dest
                add.append(Write(dest, self.cwd, "remove", links=follows))
                continue
            into = _word(os.path.join(dest.text, name_there), source)
            into.known = into.known and dest.known
            add.append(Write(into, self.cwd, "write", links=follows))

    def cd(self, target: Word | None) -> None:
        if target is None:
            self.cwd = self.env.get("HOME") or None
        elif target.known and not target.glob and target.text != "-" and self.cwd is not None:
            self.cwd = os.path.normpath(os.path.join(self.cwd, target.text))
        else:
            self.cwd = None  # somewhere loopkit cannot tell


def _word(text: str, like: Word) -> Word:
    made = Word()
    made.text, made.known, made.glob = text, like.known, like.glob
    return made


def _in_place(name: str, args: list[str]) -> bool:
    """``sed -i``, ``perl -pi``, ``gawk -i inplace``, ``yq -i``: the files are rewritten."""
    if name in ("awk", "gawk"):
        return any(a in ("-i", "--include") for a in args) and "inplace" in args
    for arg in args:
        if arg.startswith("--in-place"):
            return True
        if arg.startswith("-") and not arg.startswith("--") and "i" in arg[1:]:
            if name == "sed" and arg[1:2] in ("e", "f") and len(arg) > 2:
                continue  # -e/-f with an attached script: not an option cluster
            return True
    return False


def understand(
    command: str,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
    starts: frozenset[str] | None = None,
) -> Reading:
    """``command`` as the rules read it, relative paths from ``cwd``. ``starts``: the
    programs a view is worth making at, past a command's own (None: at every word).
    Raises :class:`~loopkit.hooks.shell.Unreadable` past the ``deadline`` (a
    ``time.monotonic()`` value) or when it is too long to read."""
    env = os.environ if env is None else env
    work = _Understanding(env, deadline, cwd, starts)
    work.reading.texts.append(command)
    work.script(read(command, env=env, deadline=deadline), 0)
    return work.reading
