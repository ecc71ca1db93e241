"""``loopkit hook install claude [--user]``: loopkit's entries in Claude Code's settings.

Merged into ``.claude/settings.json`` (or ``~/.claude/settings.json``): other settings and
other hooks are kept as they are, an entry already there is not added twice, and what
changed is returned for printing. The file is written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopkit import atomicfile, readfile
from loopkit.errors import ConfigError, WorkspaceError

PRETOOLUSE = "loopkit hook claude pretooluse"
NOTIFICATION = "loopkit hook claude notification"
MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit|mcp__.*"

ENTRIES: dict[str, dict[str, Any]] = {
    "PreToolUse": {
        "matcher": MATCHER,
        "hooks": [{"type": "command", "command": PRETOOLUSE, "timeout": 600}],
    },
    "Notification": {"hooks": [{"type": "command", "command": NOTIFICATION, "timeout": 30}]},
}


def settings_path(root: Path, user: bool) -> Path:
    return (Path.home() if user else root) / ".claude" / "settings.json"


def _has(groups: list[Any], command: str) -> bool:
    return any(
        isinstance(group, dict)
        and any(isinstance(h, dict) and h.get("command") == command for h in group.get("hooks", []))
        for group in groups
    )


def install(path: Path) -> list[str]:
    """Merge loopkit's hooks into ``path``; the list of what was added (empty: nothing)."""
    settings: dict[str, Any] = {}
    if path.exists():
        try:
            loaded = readfile.json_document(readfile.read_text(path))
        except readfile.JSONProblem as exc:
            raise ConfigError(
                f"{exc.where(path)}: {exc.reason}; fix it, then run this again"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path}: cannot read it ({exc}); fix it, then run this again"
            ) from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: not a JSON object; fix it, then run this again")
        settings = loaded
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f'{path}: "hooks" is not an object; fix it, then run this again')
    added = []
    for event, entry in ENTRIES.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{path}: hooks.{event} is not a list; fix it, then run this again")
        command = entry["hooks"][0]["command"]
        if not _has(groups, command):
            groups.append(json.loads(json.dumps(entry)))
            added.append(f"{event}: {command}")
    if added:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomicfile.write_text(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, path)) from None
    return added
