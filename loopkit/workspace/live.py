"""``.loopkit/live.json``: the agent's running turn, as the supervisor reads it (SPEC §24).

The supervisor reads the agent's event stream as it runs (:mod:`loopkit.supervisor.turnwatch`)
and keeps here what a human wants to see of the turn: the tool call running now, its input as
given (a command in full), since when, the agent's last words, its turns and calls, tokens
and spend so far, and whether it takes a message mid-turn. ``loopkit ps``, ``status``, the
Loops page and Telegram's ``/loops`` read it; nothing else does.

The file is replaced whole (a write to a temporary file and a rename: a reader sees one
version or the next, never half), never fsynced — it says what runs *now*, and a crash makes
it stale anyway (:func:`read` hands it out only for the supervisor that wrote it, while its
turn runs). Everything in it passed the supervisor's redactor.

Fields (``LIVE_VERSION`` 1): ``pid`` (the supervisor), ``iteration``, ``agent`` (``claude``,
``codex``, ``gemini``), ``session_id``, ``started_at`` (the run), ``event_at`` (its last
event or output), ``tool`` (``{"name", "input", "since", "id"}`` or null), ``text`` and
``text_at`` (the agent's last words), ``turns`` (model responses), ``calls`` (tool calls),
``tokens`` (``{"input", "output"}``), ``spend_usd`` (the run's cost, once the agent said it),
``takes_messages`` (a message reaches the running turn), ``messages`` (delivered so far),
``runaway`` (the in-turn signal that stopped it, once one did) and ``ended_at``.
"""

from __future__ import annotations

from loopkit import atomicfile, readfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from loopkit.workspace import Workspace

LIVE_VERSION = 1
NAME = "live.json"
MAX_READ = 256 * 1024  # bytes: the writer keeps it far smaller; a larger one is not ours


def path_of(workspace: Workspace) -> Path:
    return workspace.state_dir / NAME


def write(workspace: Workspace, data: dict[str, Any]) -> None:
    """Replace the record atomically, without fsync (OSError: not written)."""
    atomicfile.write_json(path_of(workspace), data, mode=0o600, durable=False)


def read(workspace: Workspace, pid: int | None) -> dict[str, Any] | None:
    """The running turn of the supervisor ``pid``, or None: no turn runs now (none
    recorded, one that ended, another supervisor's, a file that is not one of ours)."""
    if pid is None:
        return None
    try:
        raw = readfile.read_bytes(path_of(workspace), MAX_READ + 1)
        if len(raw) > MAX_READ:
            return None
        data = readfile.json_document(raw.decode())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("pid") != pid or data.get("ended_at"):
        return None
    if data.get("version") != LIVE_VERSION:
        return None
    data.pop("version", None)
    data.pop("pid", None)
    return data
