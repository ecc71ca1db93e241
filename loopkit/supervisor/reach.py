"""How far a task's change reaches, iteration by iteration: new ground or not (SPEC §25).

:meth:`Reach.start` marks where a task begins: in git, the commit it began at (and the
working tree then, whose changes are not the task's ground); outside git, the files as they
are. Each :meth:`Reach.take` then reads the task's *cumulative* change — everything that
differs from that beginning, committed or not, and the commits new since on any branch —
as hunks, turns them into keys (:mod:`loopkit.supervisor.changes`) and says how many keys
no earlier take of the task held: a :class:`Ground`. Doing nothing, flipping a file back,
rewriting the same lines, re-committing a tree seen before, and touching only comments,
timestamps, counters or versions reach no key that is new.

Left out: ``.loopkit/``, ``requests/``, ``loopkit.toml`` (loopkit's own, and the human's
to edit), the block file, git-ignored files (outside git: the tool caches). In git it costs
one ``git status``, one ``git for-each-ref``, and — when anything differs from the task's
beginning — one ``git diff -U0`` (and one per new branch tip, once); only untracked files
are read here, each again only when its stat data moved. Outside git the tree is walked
and a file is read when its stat data moved; the task's first contents are kept in memory
(text files up to :data:`MAX_FILE` bytes, :data:`MAX_KEPT` in all; a larger or binary
file, or one past that, counts as one place).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import stat
import subprocess
from functools import partial

from loopkit.config import CONFIG_NAME
from loopkit.datarecord import record
from loopkit.supervisor.changes import FileChange, Hunk, file_keys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

# Outside git there is no .gitignore to read: the caches tools write as they run (a verify
# running pytest, mypy, ruff) are left out by name, as a .gitignore would.
TOOL_CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"})
GIT_TIMEOUT = 60.0
MAX_FILE = 1 << 20  # bytes of a file read line by line; a larger one is reached as a whole
MAX_KEPT = 64 << 20  # bytes of text kept in all: past it, a file is reached as a whole
KEEP_KEYED = 4096  # files' keys remembered (a change's identity → its keys)
MAX_DIFF_LINES = 20_000  # lines of a file diffed outside git; beyond, reached as a whole
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")

_Stat = tuple[int, int, int, int]
# A change to a file, by its identity (its path and contents, or its diff's shape) and how
# to make it: made, diffed and keyed once per identity, not at every iteration.
_Change = tuple[str, "Callable[[], FileChange]"]


@record(frozen=True, slots=True)
class Ground:
    """One take: how many places the change reaches that no earlier take of the task did."""

    new: int  # keys never held before in the task: > 0 is new ground
    reached: int  # keys the cumulative change holds now
    head: str | None  # the HEAD commit (None outside git or before the first commit)
    note: str  # what the iteration did, when it broke no new ground (for the evidence)


class Reach:
    """The reach of one workspace's current task (see the module docstring)."""

    def __init__(self, root: Path, *, excluded: tuple[str, ...] = (), git: str | None = "git"):
        self.root = root
        self.excluded = frozenset({".loopkit", "requests", CONFIG_NAME, *excluded})
        self.git = git
        self._top: Path | None = None
        self._in_git: bool | None = None
        self._base: str | None = None  # the task's first commit (git)
        self._tips: set[str] = set()  # branch tips when the task began (git)
        self._tip_keys: dict[str, set[str]] = {}
        self._files: dict[str, tuple[_Stat, str, list[str] | None]] = {}  # untracked / plain
        self._kept = 0  # bytes of text the files above hold
        self._first: dict[str, tuple[str, list[str] | None]] = {}  # plain: the task's files
        self._seen: set[str] = set()
        self._last_keys: set[str] = set()
        self._digests: list[str] = []
        self._known: dict[str, tuple[set[str], int]] = {}  # a change's identity → its keys
        self.started = False

    # --- the task's beginning ----------------------------------------------------------------

    def start(self, base: str | None = None) -> None:
        """A task begins at commit ``base`` (None: HEAD now); what already differs from it
        is not the task's new ground."""
        if self._in_git is None:
            self._in_git = self._find_top()
        self._seen, self._last_keys, self._digests = set(), set(), []
        self._tip_keys = {}
        self.started = True
        if self._in_git:
            head = self._head()
            self._base = base or head or EMPTY_TREE
            self._tips = set(self._branch_tips())
        else:
            self._first = {}
            for relative in self._walk():
                read = self._read(relative)
                if read is not None:
                    self._first[relative] = (read[1], read[2])
        self.take()

    # --- each iteration ----------------------------------------------------------------------

    def take(self) -> Ground:
        """The task's change now, and what of it is new ground."""
        if not self.started:
            self.start()
        if self._in_git:
            taken = self._git_changes()
            if taken is None:  # git failed (gone, broken): the tree is read instead
                self._in_git = False
                self.start()
                return self.take()
            changes, keys, head, digest = taken
        else:
            changes, digest = self._plain_changes()
            keys, head = set(), None
        noise = 0
        for ident, make in changes:
            found, quiet = self._keys(ident, make)
            keys |= found
            noise += quiet
        new = keys - self._seen
        self._seen |= keys
        note = self._note(keys, new, digest, noise)
        self._last_keys = keys
        self._digests = [*self._digests, digest][-32:]
        return Ground(len(new), len(keys), head, note)

    def _keys(self, ident: str, make: Callable[[], FileChange]) -> tuple[set[str], int]:
        """:func:`file_keys` of the change ``ident`` names (``make`` makes it), remembered:
        a file changed since the task began and not since is neither diffed nor read into
        keys again at every iteration — an iteration costs a stat per unchanged file."""
        if ident not in self._known:
            if len(self._known) >= KEEP_KEYED:
                self._known.clear()
            self._known[ident] = file_keys(make())
        return self._known[ident]

    def _note(self, keys: set[str], new: set[str], digest: str, noise: int) -> str:
        if new:
            files = {key.split("\0")[1] for key in new}
            return f"reached {len(new)} new place(s) in {len(files)} file(s)"
        if self._digests and digest == self._digests[-1]:
            return "no change"
        if digest in self._digests:
            return "back to an earlier state"
        if keys == self._last_keys and noise:
            return "only comments, blank lines, timestamps, counters or versions changed"
        return "the same lines changed again"

    # --- git ----------------------------------------------------------------------------------

    def _find_top(self) -> bool:
        if self.git is None:
            return False
        here = self.root.resolve()
        for folder in (here, *here.parents):
            if (folder / ".git").exists():
                self._top = folder
                return True
        return False

    def _run_git(self, *args: str) -> bytes | None:
        assert self.git is not None
        try:
            done = subprocess.run(
                [self.git, "-c", "core.quotePath=false", *args],
                cwd=self.root,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    def _pathspec(self) -> list[str]:
        return ["--", ".", *(f":(exclude,top){self._from_top(n)}" for n in sorted(self.excluded))]

    def _from_top(self, name: str) -> str:
        assert self._top is not None
        try:
            here = self.root.resolve().relative_to(self._top.resolve())
        except ValueError:
            return name
        return (here / name).as_posix() if str(here) != "." else name

    def _diff(self, *commits: str) -> bytes | None:
        """``git diff -U0`` from the first commit to the second (or the working tree)."""
        options = ("-U0", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv")
        return self._run_git("diff", *options, *commits, *self._pathspec())

    def _head(self) -> str | None:
        out = self._run_git("rev-parse", "-q", "--verify", "HEAD^{commit}")
        return out.decode().strip() or None if out else None

    def _branch_tips(self) -> list[str]:
        out = self._run_git("for-each-ref", "--format=%(objectname)", "refs/heads/")
        return out.decode().split() if out else []

    def _git_changes(self) -> tuple[list[_Change], set[str], str | None, str] | None:
        """The cumulative change as hunks, the keys of new branch tips (read once each), the
        HEAD commit and a digest of it all (None: git failed)."""
        status = self._run_git(
            "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
            "--no-renames", "--ignore-submodules=dirty", *self._pathspec(),
        )  # fmt: skip
        if status is None:
            return None
        head: str | None = None
        untracked: list[str] = []
        dirty = False
        for entry in status.split(b"\0"):
            if entry.startswith(b"# branch.oid "):
                oid = entry[len(b"# branch.oid ") :].decode()
                head = None if oid == "(initial)" else oid
            elif entry.startswith(b"? "):
                untracked.append(os.fsdecode(entry[2:]))
            elif entry[:1] in (b"1", b"2", b"u"):
                dirty = True
        digest = hashlib.sha256(f"{head}\0".encode())
        changes: list[_Change] = []
        if dirty or (head or EMPTY_TREE) != self._base:
            diff = self._diff(self._base or EMPTY_TREE)
            if diff is None:
                return None
            digest.update(diff)
            changes.extend(_made(c) for c in parse_diff(diff.decode("utf-8", "replace")))
        seen = set()
        for relative in untracked:
            seen.add(relative)
            read = self._read(relative, top=True)
            if read is None:
                continue
            digest.update(f"{relative}\0{read[1]}\0".encode())
            changes.append(_new(relative, read))
        for gone in set(self._files) - seen:
            self._forget(gone)
        tips: set[str] = set()
        for tip in self._branch_tips():
            if tip in self._tips or tip == head:
                continue
            digest.update(tip.encode())
            if tip not in self._tip_keys:
                out = self._diff(self._base or EMPTY_TREE, tip)
                keys: set[str] = set()
                for change in parse_diff(out.decode("utf-8", "replace")) if out else []:
                    keys |= file_keys(change)[0]
                self._tip_keys[tip] = keys
            tips |= self._tip_keys[tip]
        return changes, tips, head, digest.hexdigest()

    # --- outside git ------------------------------------------------------------------------

    def _walk(self) -> list[str]:
        found: list[str] = []
        stack = [""]
        while stack:
            folder = stack.pop()
            try:
                entries = list(os.scandir(self.root / folder))
            except OSError:
                continue
            for entry in entries:
                relative = f"{folder}/{entry.name}" if folder else entry.name
                if (not folder and entry.name in self.excluded) or entry.name in TOOL_CACHES:
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(relative)
                        continue
                except OSError:
                    continue
                found.append(relative)
        return sorted(found)

    def _plain_changes(self) -> tuple[list[_Change], str]:
        digest = hashlib.sha256(b"tree\0")
        changes: list[_Change] = []
        now = self._walk()
        for relative in now:
            read = self._read(relative)
            if read is None:
                continue
            digest.update(f"{relative}\0{read[1]}\0".encode())
            first = self._first.get(relative)
            if first is None:
                changes.append(_new(relative, read))
            elif first[0] != read[1]:
                ident = f"diff\0{relative}\0{first[0]}\0{read[1]}"
                changes.append((ident, partial(_diffed, relative, first[1], read[2])))
        for gone in sorted(set(self._first) - set(now)):
            hashed, lines = self._first[gone]
            changes.append((f"gone\0{gone}\0{hashed}", partial(_whole, gone, lines, new=False)))
        for gone in set(self._files) - set(now):
            self._forget(gone)
        return changes, digest.hexdigest()

    # --- both ---------------------------------------------------------------------------------

    def _forget(self, relative: str) -> None:
        known = self._files.pop(relative, None)
        if known is not None:
            self._kept -= _size(known[2])

    def _read(
        self, relative: str, *, top: bool = False
    ) -> tuple[_Stat, str, list[str] | None] | None:
        """A file's stat, content hash and lines (None: binary, too large, not a regular
        file), read again only when its stat data moved."""
        folder = self._top if top and self._top is not None else self.root
        path = f"{os.fspath(folder)}/{relative}"  # a str: a Path per file, per iteration, costs
        try:
            info = os.lstat(path)
        except OSError:
            return None
        key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        known = self._files.get(relative)
        if known is not None and known[0] == key:
            return known
        lines: list[str] | None = None
        if stat.S_ISLNK(info.st_mode):
            hashed = "link:" + hashlib.sha256(os.fsencode(os.readlink(path))).hexdigest()
        elif not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE:
            hashed = f"other:{info.st_size}:{info.st_mtime_ns}"
        else:
            try:
                with open(path, "rb") as handle:
                    data = handle.read(MAX_FILE + 1)
            except OSError:
                return None
            hashed = hashlib.sha256(data).hexdigest()
            if b"\0" not in data[:8192] and self._kept + len(data) <= MAX_KEPT:
                lines = data.decode("utf-8", "replace").splitlines()
        self._forget(relative)
        self._kept += _size(lines)
        found = (key, hashed, lines)
        self._files[relative] = found
        return found


def _new(relative: str, read: tuple[_Stat, str, list[str] | None]) -> _Change:
    """A file the task added, known by its content: made into a change only once."""
    return f"new\0{relative}\0{read[1]}", partial(_whole, relative, read[2], new=True)


def _made(change: FileChange) -> _Change:
    """A change parsed from git's diff, known by its shape."""
    shape = repr((change.path, change.new, change.gone, change.binary,
                  [(h.at, h.removed, h.added) for h in change.hunks]))  # fmt: skip
    ident = hashlib.sha256(shape.encode("utf-8", "surrogatepass")).hexdigest()
    return ident, partial(_same, change)


def _same(change: FileChange) -> FileChange:
    return change


def _size(lines: list[str] | None) -> int:
    return sum(len(line) + 1 for line in lines) if lines else 0


def parse_diff(text: str) -> list[FileChange]:
    """``git diff -U0``'s output as one :class:`FileChange` per file."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    hunk: Hunk | None = None
    number = 0
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            rest = line[len("diff --git ") :]
            if rest.startswith('"'):  # a quoted name: "a/x\ty" "b/x\ty"
                path = _unquote(rest[: rest.index('" ', 1) + 1])[2:]
            else:
                path = rest[2 : 2 + (len(rest) - 5) // 2]
            current, hunk = FileChange(path), None
            changes.append(current)
        elif current is None:
            continue
        elif hunk is None and line.startswith("new file mode"):
            current.new = True
        elif hunk is None and line.startswith("deleted file mode"):
            current.gone = True
        elif hunk is None and line.startswith("Binary files "):
            current.binary = True
        elif line.startswith("@@ "):
            match = _HUNK.match(line)
            if match is None:
                continue
            number = int(match.group(1))
            hunk = Hunk(at=number)
            current.hunks.append(hunk)
        elif hunk is not None and line.startswith("-"):
            hunk.removed.append((number, line[1:]))
            number += 1
        elif hunk is not None and line.startswith("+"):
            hunk.added.append(line[1:])
    return changes


def _unquote(path: str) -> str:
    if len(path) > 1 and path[0] == path[-1] == '"':
        return path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return path


def _whole(path: str, lines: list[str] | None, *, new: bool) -> FileChange:
    """A file added (``new``) or deleted as a whole."""
    if lines is None:
        return FileChange(path, binary=True)
    if new:
        return FileChange(path, [Hunk(0, added=list(lines))], new=True)
    return FileChange(path, [Hunk(1, removed=list(enumerate(lines, 1)))], gone=True)


def _diffed(path: str, first: list[str] | None, now: list[str] | None) -> FileChange:
    """A file changed outside git, as hunks against its first contents."""
    if first is None or now is None or max(len(first), len(now)) > MAX_DIFF_LINES:
        return FileChange(path, binary=True)
    change = FileChange(path)
    matcher = difflib.SequenceMatcher(None, first, now, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        at = i1 if tag == "insert" else i1 + 1
        change.hunks.append(
            Hunk(at, removed=[(n + 1, first[n]) for n in range(i1, i2)], added=now[j1:j2])
        )
    return change
