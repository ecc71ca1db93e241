"""The workspace's state as one digest, cheap enough for every iteration (SPEC section 19).

Two digests are equal exactly when the workspace holds the same thing: in a git repository,
the same HEAD commit, the same index and the same working tree (tracked files' content,
untracked files' content, deletions); outside git, the same files with the same content.
``.loopkit/``, ``requests/``, the block file and git-ignored files are left out: they are
loopkit's own or the build's, never progress. A commit is progress (HEAD moves), and so is
any content change; touching a file (its mtime alone) is not.

Cheap: in git, one ``git status --porcelain=v2 -z`` — git compares the working tree with
its index by the stat data it caches, so unchanged files are not read — and only the files
it reports as changed or untracked are hashed here, each again only when its stat data
moved since the last digest (:class:`Snapshots` remembers them). Outside git, a walk of the
tree with the same rule: a file is read when its size, mtime, ctime or inode moved.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

# Outside git there is no .gitignore to read: the caches tools write as they run (a verify
# running pytest, mypy, ruff) are left out by name, as a .gitignore would.
TOOL_CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git"})
GIT_TIMEOUT = 60.0

_Stat = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


@record(frozen=True, slots=True)
class Snapshot:
    digest: str
    head: str | None  # the HEAD commit (None outside git, or before the first commit)


def _stat_key(info: os.stat_result) -> _Stat:
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


class Snapshots:
    """Takes :class:`Snapshot` s of one workspace, remembering the hashes of files it read.

    ``excluded`` are the workspace-relative names left out besides ``.loopkit`` and
    ``requests`` (the block file). ``git`` is the program, or None to never use git.
    """

    def __init__(self, root: Path, *, excluded: tuple[str, ...] = (), git: str | None = "git"):
        self.root = root
        self.excluded = frozenset({".loopkit", "requests", *excluded})
        self.git = git
        self._hashes: dict[str, tuple[_Stat, str]] = {}
        self._top: Path | None = None
        self._in_git: bool | None = None

    def take(self) -> Snapshot:
        if self._in_git is None:
            self._in_git = self._find_top()
        if self._in_git:
            taken = self._git()
            if taken is not None:
                return taken
        return Snapshot(self._tree(), None)

    # --- git ------------------------------------------------------------------------------

    def _run_git(self, *args: str) -> bytes | None:
        assert self.git is not None
        try:
            done = subprocess.run(
                [self.git, *args],
                cwd=self.root,
                capture_output=True,
                timeout=GIT_TIMEOUT,
                check=False,
                env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    def _find_top(self) -> bool:
        """Whether the workspace is in a git work tree: its ``.git`` found upward (a folder,
        or a worktree's file) — no process started for a workspace outside git."""
        if self.git is None:
            return False
        here = self.root.resolve()
        for folder in (here, *here.parents):
            if (folder / ".git").exists():
                self._top = folder
                return True
        return False

    def _git(self) -> Snapshot | None:
        excludes = [f":(exclude,top){self._from_top(name)}" for name in sorted(self.excluded)]
        out = self._run_git(
            "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all",
            "--no-renames", "--ignore-submodules=dirty", "--", ".", *excludes,
        )  # fmt: skip
        if out is None:
            return None
        digest = hashlib.sha256(b"git\0")
        head: str | None = None
        seen: set[str] = set()
        for entry in out.split(b"\0"):
            if not entry:
                continue
            if entry.startswith(b"# branch.oid "):
                oid = entry[len(b"# branch.oid ") :].decode()
                head = None if oid == "(initial)" else oid
                digest.update(entry + b"\0")
                continue
            if entry.startswith(b"#"):
                continue  # the branch's name and upstream: not the workspace's content
            digest.update(entry + b"\0")
            kind = entry[:1]
            if kind == b"?":
                path = entry[2:]
            elif kind in (b"1", b"u"):
                fields = entry.split(b" ", 8 if kind == b"1" else 10)
                if fields[1][1:2] == b".":  # the working tree matches the index: in the entry
                    continue
                path = fields[-1]
            else:
                continue
            relative = os.fsdecode(path)
            seen.add(relative)
            digest.update(self._content(relative).encode() + b"\0")
        for gone in set(self._hashes) - seen:
            del self._hashes[gone]
        return Snapshot(digest.hexdigest(), head)

    def _from_top(self, name: str) -> str:
        assert self._top is not None
        try:
            here = self.root.resolve().relative_to(self._top.resolve())
        except ValueError:
            return name
        return (here / name).as_posix() if str(here) != "." else name

    def _content(self, relative: str) -> str:
        """The hash of a file git reports as changed, reread only when its stat moved."""
        assert self._top is not None
        return self._hash(self._top / relative, relative)

    # --- outside git ----------------------------------------------------------------------

    def _tree(self) -> str:
        digest = hashlib.sha256(b"tree\0")
        seen: set[str] = set()
        for relative in sorted(self._walk()):
            seen.add(relative)
            digest.update(relative.encode(errors="surrogateescape") + b"\0")
            digest.update(self._hash(self.root / relative, relative).encode() + b"\0")
        for gone in set(self._hashes) - seen:
            del self._hashes[gone]
        return digest.hexdigest()

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
        return found

    # --- both -----------------------------------------------------------------------------

    def _hash(self, path: Path, key: str) -> str:
        try:
            info = os.lstat(path)
        except OSError:
            return "gone"
        stat_key = _stat_key(info)
        known = self._hashes.get(key)
        if known is not None and known[0] == stat_key:
            return known[1]
        try:
            if stat.S_ISLNK(info.st_mode):
                content = os.fsencode(os.readlink(path))
                hashed = "link:" + hashlib.sha256(content).hexdigest()
            elif stat.S_ISDIR(info.st_mode):
                hashed = "folder"  # a submodule or nested repository: its own HEAD is not ours
            elif not stat.S_ISREG(info.st_mode):
                hashed = f"special:{stat.S_IFMT(info.st_mode):o}"  # a FIFO is never opened
            else:
                hasher = hashlib.sha256()
                with open(path, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        hasher.update(chunk)
                hashed = hasher.hexdigest()
        except OSError:
            hashed = "unreadable"
        self._hashes[key] = (stat_key, hashed)
        return hashed
