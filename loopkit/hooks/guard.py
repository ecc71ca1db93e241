"""loopkit's own files, which an agent under ``loopkit run`` changes only with a human's
approval (SPEC section 28: the agent cannot switch the gate off).

Under ``loopkit run`` (the hook sees ``LOOPKIT_AGENT_SESSION``) a write, a removal, a move
or a mode change of any of these by the agent's file tools (Claude's Write, Edit,
MultiEdit, NotebookEdit; Codex's apply_patch; Gemini's write_file, replace) or by its shell
(redirections, ``sed -i``, ``mv``, ``cp``, ``rm``, ``tee``, ``truncate``, ``chmod``, ``ln``,
``dd of=``, ``git checkout -- FILE`` …) is a gated call: the human is asked.

- the workspace's ``loopkit.toml``, ``.loopkit/`` and ``requests/``;
- its block file (``BLOCKED.md``, or ``[escalation] blocked_file``) while it exists: an
  agent may raise a block by writing one, never change or remove one;
- the agents' settings and hooks: every ``.claude/``, ``.codex/`` and ``.gemini/`` folder
  (the workspace's, the home's, anywhere), ``~/.claude.json``, and the folders
  ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` and ``GEMINI_CLI_HOME`` name;
- for a removal, a move or a mode change (``rm -r``, ``mv``, ``chmod -R``): the workspace
  folder and every folder above it, which hold all of these.

Paths are compared without regard to case (on a case-sensitive file system ``LOOPKIT.TOML``
asks too: over-matched on purpose), after ``..`` and — where the write goes through a link:
a file tool, a redirection, ``tee``, ``cp``'s destination, ``chmod`` — symbolic links are
resolved, and a hard link to ``loopkit.toml`` or an agent's settings file is known by its
inode (``rm``, ``mv`` and ``sed -i`` replace or remove a link, not what it points to); a
program loopkit does not know asks when handed one of them by name. A glob
(``rm BLOCK*``, ``cp x .c*/settings.json``) asks when it could name one of them. A target
loopkit cannot read — a variable it does not know, a ``cd`` to a place it cannot tell —
asks when the command names any of these files at all.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from loopkit.hooks.commandline import Reading

AGENT_FOLDERS = (".claude", ".codex", ".gemini")
_AGENT_HOMES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME")
# The agents' settings and hook files, known by their inode too (a hard link to one).
_SETTINGS = (
    ".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json",
    ".codex/config.toml", ".gemini/settings.json",
)  # fmt: skip


class Guard:
    """loopkit's own files for the workspace at ``workspace`` (absolute), whose block file
    is ``blocked`` (relative to it)."""

    def __init__(
        self, workspace: str, blocked: str = "BLOCKED.md", env: Mapping[str, str] | None = None
    ) -> None:
        env = os.environ if env is None else env
        self.workspace = os.path.normpath(workspace)
        self.blocked = os.path.normpath(os.path.join(self.workspace, blocked))
        home = env.get("HOME") or os.path.expanduser("~")
        self.home = os.path.normpath(home) if home else None
        root = self.workspace
        # file → its label; folder → its label (everything below it too)
        self.files = {_key(os.path.join(root, "loopkit.toml")): "loopkit.toml"}
        if self.home:
            self.files[_key(os.path.join(self.home, ".claude.json"))] = "~/.claude.json"
        self.folders = {
            _key(os.path.join(root, ".loopkit")): ".loopkit/",
            _key(os.path.join(root, "requests")): "requests/",
        }
        for name in _AGENT_HOMES:
            if env.get(name):
                self.folders[_key(os.path.normpath(env[name]))] = f"${name}/"
        self.words = tuple(
            sorted(
                {"loopkit.toml", ".loopkit", "requests", *AGENT_FOLDERS,
                 os.path.basename(self.blocked).lower()}
            )
        )  # fmt: skip
        self._inodes: set[tuple[int, int]] | None = None

    # --- one path -------------------------------------------------------------------------

    def path(self, path: str, cwd: str, *, folders: bool = False, links: bool = True) -> str | None:
        """What of loopkit's ``path`` (relative to ``cwd``) is, or is inside — or, with
        ``folders`` (a removal, a move, a mode change), holds: its label, else None. With
        ``links``, through a symbolic or a hard link too."""
        full = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
        for candidate in _spellings(full) if links else [full]:
            found = self._label(_key(candidate), folders=folders)
            if found is not None:
                return found
        return self._linked(full) if links else None

    def _label(self, key: str, *, folders: bool) -> str | None:
        parts = key.split("/")
        for name in AGENT_FOLDERS:
            if name in parts:
                return f"{name}/"
        if key in self.files:
            return self.files[key]
        if key == _key(self.blocked) and os.path.lexists(self.blocked):
            return os.path.basename(self.blocked)
        for folder, label in self.folders.items():
            if key == folder or key.startswith(folder + "/"):
                return label
        if folders and (key == "/" or _key(self.workspace).startswith(key.rstrip("/") + "/")
                        or key == _key(self.workspace)):  # fmt: skip
            return "the workspace folder"
        return None

    def _linked(self, full: str) -> str | None:
        """A hard link to ``loopkit.toml`` or an agent's settings file, by its inode."""
        try:
            info = os.stat(full)
        except OSError:
            return None
        if info.st_nlink < 2:
            return None
        if self._inodes is None:
            self._inodes = set()
            places = [self.workspace] + ([self.home] if self.home else [])
            for folder in places:
                for name in ("loopkit.toml", *_SETTINGS):
                    try:
                        found = os.stat(os.path.join(folder, name))
                    except OSError:
                        continue
                    self._inodes.add((found.st_dev, found.st_ino))
        if (info.st_dev, info.st_ino) in self._inodes:
            return f"{os.path.basename(full)} (a hard link to loopkit's or an agent's file)"
        return None

    def pattern(self, pattern: str, cwd: str, *, folders: bool = False) -> str | None:
        """A glob a command writes through: the label of what of loopkit's it could name."""
        import fnmatch

        full = _key(os.path.normpath(os.path.join(cwd, os.path.expanduser(pattern))))
        wanted = full.split("/")
        named = [*self.files, _key(self.blocked), *self.folders]
        if self.home:
            named += [_key(os.path.join(self.home, f)) for f in AGENT_FOLDERS]
        named += [_key(os.path.join(self.workspace, f)) for f in AGENT_FOLDERS]
        for target in named:
            parts = target.split("/")
            if not all(fnmatch.fnmatchcase(p, w) for p, w in zip(parts, wanted, strict=False)):
                continue
            # the pattern names it or something inside it — or, removing, a folder holding it
            if len(wanted) >= len(parts) or folders:
                if target == _key(self.blocked) and not os.path.lexists(self.blocked):
                    continue
                return self._label(target, folders=True) or target.rsplit("/", 1)[-1]
        for name in AGENT_FOLDERS:
            if any(fnmatch.fnmatchcase(name, part) for part in wanted[:-1] if "*" in part):
                return f"{name}/"
        return None

    # --- a command ------------------------------------------------------------------------

    def command(self, reading: Reading, raw: str) -> str | None:
        """The label of loopkit's file the command writes, removes, moves or changes the
        mode of (see the module docstring), else None."""
        mentioned: bool | None = None
        for write in reading.writes:
            word = write.word
            folders = write.how == "remove"
            relative = not word.text.startswith(("/", "~"))
            if not word.known or (write.cwd is None and relative):
                if mentioned is None:
                    folded = raw.lower()
                    mentioned = any(name in folded for name in self.words)
                if mentioned:
                    return "a path loopkit cannot read in a command naming its files"
                continue
            cwd = write.cwd or self.workspace
            if word.glob:
                found = self.pattern(word.text, cwd, folders=folders)
            else:
                # (a program loopkit does not know, handed loopkit's own path by its name —
                # ``how`` "name", no links followed — may write it too)
                found = self.path(word.text, cwd, folders=folders, links=write.links)
            if found is not None:
                return found
        return None


def _key(path: str) -> str:
    """A path as compared: case aside."""
    return path.lower()


def _spellings(full: str) -> list[str]:
    """The path as given and as its symbolic links resolve."""
    resolved = os.path.realpath(full)
    return [full] if resolved == full else [full, resolved]
