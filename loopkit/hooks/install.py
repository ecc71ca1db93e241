"""``loopkit hook install claude [--user]``: loopkit's entries in Claude Code's settings.

Merged into ``.claude/settings.json`` (or ``~/.claude/settings.json``): other settings and
other hooks are kept as they are, an entry already there is not added twice, and what
changed is returned for printing. The file is written atomically.

The command names the installed ``loopkit`` by its absolute path (:func:`program`). Claude
Code runs a hook's command in a shell with its own PATH; a bare ``loopkit`` that PATH lacks
exits 127, which Claude Code's hooks reference
(https://docs.anthropic.com/en/docs/claude-code/hooks, "Exit code output") makes a
non-blocking error: the call proceeds, and the gate fails open. An entry of loopkit's
written before (a bare ``loopkit``, or another install's path) is rewritten in place.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from loopkit import atomicfile, readfile
from loopkit.errors import ConfigError, WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit|mcp__.*|AskUserQuestion"
OLD_MATCHERS = ("Bash|Write|Edit|MultiEdit|NotebookEdit|mcp__.*",)  # rewritten to MATCHER
# Claude Code's event → loopkit's hook command words (after the program) and the timeout.
EVENTS: dict[str, tuple[tuple[str, ...], int]] = {
    "PreToolUse": (("hook", "claude", "pretooluse"), 600),
    "Notification": (("hook", "claude", "notification"), 30),
    "PermissionRequest": (("hook", "claude", "permission-request"), 600),
    "StopFailure": (("hook", "claude", "stop-failure"), 30),
}


def program() -> list[str]:
    """The words that start this very loopkit, absolute: the ``loopkit`` script that is
    running (``sys.argv[0]``), else the one beside this interpreter, else
    ``<python> -m loopkit``."""
    me = sys.argv[0] if sys.argv else ""
    if os.path.basename(me) == "loopkit" and os.path.isfile(me) and os.access(me, os.X_OK):
        return [os.path.abspath(me)]
    beside = os.path.join(os.path.dirname(sys.executable), "loopkit")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return [beside]
    return [sys.executable, "-m", "loopkit"]


def command(event: str, start: list[str] | None = None) -> str:
    """The shell command of loopkit's hook for ``event``, started by ``start`` (default:
    :func:`program`)."""
    return shlex.join([*(start or program()), *EVENTS[event][0]])


def ours(text: object) -> tuple[str, list[str]] | None:
    """``(event, program words)`` when ``text`` is a command of loopkit's hooks (``loopkit
    [-C DIR] hook claude <event>``, by any path, or ``<python> -m loopkit …``), else None."""
    if not isinstance(text, str):
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    for event, (tail, _) in EVENTS.items():
        if len(words) > len(tail) and tuple(words[-len(tail) :]) == tail:
            head = words[: -len(tail)]
            if os.path.basename(head[0]) == "loopkit" or head[1:3] == ["-m", "loopkit"]:
                return event, head
    return None


def wrapped_head(text: object, tail: tuple[str, ...]) -> list[str] | None:
    """The program words of loopkit's hook ``tail`` when ``text`` runs it inside a longer
    shell line — ``loopkit hook claude pretooluse || true``, ``… | tee log``, ``cd x && …``,
    ``… >/dev/null`` — else None (not loopkit's, or loopkit's alone). Such a line can lose the
    hook's deny: ``|| true`` turns its exit 2 into 0 and a redirected stdout drops its
    answer, and the agent then runs the call. Only a redirection of stderr (``2>>log``) is
    harmless."""
    if not isinstance(text, str):
        return None
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:
        return None
    n = len(tail)
    for at in range(1, len(words) - n + 1):
        if tuple(words[at : at + n]) != tail:
            continue
        start = at - 1
        if os.path.basename(words[start]) != "loopkit":
            continue
        if start >= 2 and words[start - 1] == "-m":
            start -= 2  # <python> -m loopkit
        extra = words[:start] + words[at + n :]
        if extra and not _stderr_only(extra):
            return words[start:at]
    return None


def _stderr_only(words: list[str]) -> bool:
    """``2> FILE`` / ``2>> FILE`` redirections, and nothing else."""
    while words:
        if len(words) < 3 or words[0] != "2" or words[1] not in (">", ">>"):
            return False
        words = words[3:]
    return True


def settings_path(root: Path, user: bool) -> Path:
    return (Path.home() if user else root) / ".claude" / "settings.json"


def install(path: Path, start: list[str] | None = None) -> list[str]:
    """Merge loopkit's hooks into ``path``; the list of what was added or updated (empty:
    nothing). ``start``: the words that start loopkit (default: :func:`program`)."""
    start = start or program()
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
    changed = []
    for event, (_, timeout) in EVENTS.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{path}: hooks.{event} is not a list; fix it, then run this again")
        wanted = command(event, start)
        found = False
        for group in groups:
            if (
                isinstance(group, dict)
                and group.get("matcher") in OLD_MATCHERS
                and any(ours(e.get("command")) for e in _entries([group]))
            ):
                changed.append(f"updated {event} matcher: {group['matcher']} -> {MATCHER}")
                group["matcher"] = MATCHER
        for entry in _entries(groups):
            seen = ours(entry.get("command"))
            head = wrapped_head(entry.get("command"), EVENTS[event][0])
            if head is not None:  # a wrapper that can lose its deny: written as loopkit's alone
                seen = (event, head)
            if seen is None or seen[0] != event:
                continue
            found = True
            # Keep what follows the program (a -C DIR the user added); give it this program.
            fresh = shlex.join([*start, *_options(seen[1]), *EVENTS[event][0]])
            if entry["command"] != fresh:
                changed.append(f"updated {event}: {entry['command']} -> {fresh}")
                entry["command"] = fresh
        if not found:
            groups.append(_group(event, wanted, timeout))
            changed.append(f"added {event}: {wanted}")
    if changed:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomicfile.write_text(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, path)) from None
    return changed


def _options(head: list[str]) -> list[str]:
    """What follows the program in ``head`` (``-C DIR``)."""
    skip = 3 if head[1:3] == ["-m", "loopkit"] else 1
    return head[skip:]


def _entries(groups: list[Any]) -> list[dict[str, Any]]:
    return [
        hook
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
        if isinstance(hook, dict)
    ]


def _group(event: str, text: str, timeout: int) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": text, "timeout": timeout}]}
    return {"matcher": MATCHER, **group} if event == "PreToolUse" else group
