"""``loopkit hook claude notification``: Claude Code's permission and idle notifications go
to the phone as one line (no block), at most one per session every 10 minutes.

The last send per session is kept in ``LOOPKIT_HOME/hooks/<sha of the session>.json``.
Nothing here ever fails the hook: a channel that cannot send is logged, exit 0.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from loopkit import atomicfile, channels, readfile
from loopkit import config as config_mod
from loopkit.home import home
from loopkit.log import get_logger
from loopkit.message import Notice
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

log = get_logger("loopkit.hooks")

EVERY = 600.0  # seconds: one line per session at most this often
KINDS = ("permission_prompt", "idle_prompt")


def kind_of(event: dict[str, Any]) -> str | None:
    """``notification_type`` when Claude Code gives it, else read from the message."""
    given = event.get("notification_type")
    if isinstance(given, str):
        return given if given in KINDS else None
    message = str(event.get("message") or "").lower()
    if "permission" in message:
        return "permission_prompt"
    if "waiting for your input" in message or "idle" in message:
        return "idle_prompt"
    return None


def _due(session: str, now: float) -> Path | None:
    """The session's rate-limit file when a line may go out now, else None."""
    folder = home() / "hooks"
    path = folder / f"{hashlib.sha256(session.encode()).hexdigest()[:16]}.json"
    try:
        last = float(readfile.json_document(readfile.read_text(path)).get("sent_at", 0))
    except (OSError, ValueError, AttributeError, TypeError):
        last = 0.0
    return path if now - last >= EVERY else None


def notify(workspace: str, event: dict[str, Any], *, agent: str = "Claude Code") -> str:
    """Send the line if it is one to send; returns what happened (for the log and tests).
    ``agent`` names who is waiting (Codex's notify program sends its turns here too)."""
    kind = kind_of(event)
    if kind is None:
        return "ignored: not a permission or idle notification"
    session = str(event.get("session_id") or "unknown")
    now = time.time()
    path = _due(session, now)
    if path is None:
        return "ignored: this session was told less than 10 minutes ago"
    config = config_mod.load(Path(workspace), lenient=True)
    people = config.escalation.people  # with [[escalation.people]]: the first of them
    ladder = [p.channel for p in people] or [n for n in config.escalation.ladder if n != "none"]
    if not ladder:
        return "ignored: no channel configured"
    repo = Workspace.of(config).repo_name()
    settings = config.channels.for_person(people[0]) if people else config.channels
    channel = channels.create(ladder[0], settings, budget=config.escalation.send_timeout)
    said = str(event.get("message") or kind.replace("_", " "))
    outcome = channel.send(Notice(repo, said, agent=agent))
    if not outcome.ok:
        log.warning("notice_failed", msg=f"{agent} notification not sent: {outcome.error}")
        return f"not sent: {outcome.error}"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomicfile.write_json(path, {"session": session, "sent_at": now}, durable=False)
    return f"sent via {ladder[0]}"
