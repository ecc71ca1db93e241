"""The ``PATH`` the loop's commands run with: the user's own, and after it — last, so it
shadows nothing of theirs — the folder of the ``loopkit`` that runs the loop.

A user may start loopkit by its path (a virtualenv not on ``PATH``); the agent's
instructions still say ``loopkit escalate``, and the ``done`` that ``init --task-file``
writes is ``loopkit tasks --done``. Both then find the loopkit that runs the loop, and
``run``'s check of the programs (and ``doctor``'s) looks them up on this same ``PATH``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def own_folder() -> str | None:
    """The folder of the running ``loopkit`` command (the script, else the one beside this
    interpreter), or None."""
    me = sys.argv[0] if sys.argv else ""
    if os.path.basename(me) == "loopkit" and os.path.isfile(me) and os.access(me, os.X_OK):
        return os.path.dirname(os.path.abspath(me))
    beside = os.path.join(os.path.dirname(sys.executable), "loopkit")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return os.path.dirname(beside)
    return None


def with_loopkit(path: str, folder: str | None = None) -> str:
    """``path`` with loopkit's folder appended, unless it is on it already."""
    folder = own_folder() if folder is None else folder
    entries = path.split(os.pathsep) if path else []
    if folder is None or folder in entries:
        return path
    return os.pathsep.join([*entries, folder])


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (this process's) as the loop's commands get it, ``PATH`` included."""
    env = dict(os.environ if environ is None else environ)
    env["PATH"] = with_loopkit(env.get("PATH", os.defpath))
    return env
