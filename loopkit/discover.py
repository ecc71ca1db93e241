"""Finding the workspace (SPEC section 9), with the standard library alone.

Every command finds its workspace the same way, highest first: ``-C DIR``; else
``LOOPKIT_WORKSPACE`` (the supervisor sets it for the agent and everything it starts); else
the nearest folder upward holding ``loopkit.toml`` or ``.loopkit/``; else the current
folder. So an agent that ``cd``s into ``src/`` and runs ``loopkit escalate`` blocks the
workspace root. The climb never goes above the enclosing git repository's root (a folder
holding ``.git``, a folder or a worktree's file) or the home folder (SPEC section 17): a
stray ``.loopkit/`` in the temporary folder or the home's parent captures no repository
below it. ``loopkit check`` calls this too, so it imports nothing but ``os``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # collections.abc would import collections: ~1.5 ms of every hook's start
if TYPE_CHECKING:
    from collections.abc import Mapping

MARKS = ("loopkit.toml", ".loopkit")


class NotAFolder(Exception):
    """``-C`` or ``LOOPKIT_WORKSPACE`` names something that is not a folder."""


def find_workspace(
    explicit: str | None, environ: Mapping[str, str] | None = None, cwd: str | None = None
) -> str:
    """The workspace folder, absolute. Raises :class:`NotAFolder` with a one-line reason."""
    environ = os.environ if environ is None else environ
    here = os.path.abspath(cwd or os.getcwd())
    if explicit is not None:
        return _folder(os.path.join(here, explicit), explicit, "pass -C an existing folder")
    named = environ.get("LOOPKIT_WORKSPACE", "").strip()
    if named:
        fix = "LOOPKIT_WORKSPACE names it: unset it, or point it at the workspace folder"
        return _folder(os.path.join(here, named), named, fix)
    named_home = environ.get("HOME", "").strip()
    home = os.path.abspath(named_home) if named_home else None
    folder = here
    while True:
        if any(os.path.exists(os.path.join(folder, mark)) for mark in MARKS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder or folder == home or os.path.exists(os.path.join(folder, ".git")):
            return here
        folder = parent


def is_workspace(folder: str) -> bool:
    """Whether ``folder`` is a loopkit workspace: it holds ``loopkit.toml`` or ``.loopkit/``
    (or a ``BLOCKED.md``: a block an agent wrote before loopkit ever ran there)."""
    return any(os.path.exists(os.path.join(folder, mark)) for mark in (*MARKS, "BLOCKED.md"))


def _folder(path: str, shown: str, fix: str) -> str:
    if not os.path.isdir(path):
        raise NotAFolder(f"workspace {shown!r} is not a folder; {fix}")
    return os.path.abspath(path)
