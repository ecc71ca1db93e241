"""``loopkit hook install codex|gemini [--user]``: loopkit's entries in Codex's and Gemini
CLI's hook configuration, merged as ``install claude`` merges Claude Code's.

- Codex reads ``hooks.json`` beside each config layer (``~/.codex/hooks.json``,
  ``<repo>/.codex/hooks.json``; openai/codex ``hooks/src/engine/discovery.rs``), a
  ``timeout`` in seconds (default 600) — a project's only in a trusted project, and each
  hook only once it is trusted (:mod:`~loopkit.hooks.codextrust` asks Codex to trust
  loopkit's). It runs one ``notify`` program, named at the top of the *user's*
  ``$CODEX_HOME/config.toml`` (a project's ``notify`` is not read). The notify line is
  added only when the file has none (Codex runs one program; another's is never replaced),
  as a line of text: the rest of the file is kept byte for byte.
- Gemini CLI reads ``hooks`` from ``.gemini/settings.json`` (or ``~/.gemini/settings.json``),
  a ``timeout`` in *milliseconds* (default 60000; a timed-out hook lets the call run, so it is
  set above ``[hooks] wait``).

Other settings and other hooks are kept; an entry of loopkit's is not added twice (one
written before by another path is rewritten to this loopkit); what changed is returned.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from loopkit import atomicfile, readfile
from loopkit.datarecord import record
from loopkit.errors import ConfigError, WorkspaceError
from loopkit.hooks.install import _entries, _options, program, wrapped_head

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@record(frozen=True, slots=True)
class Agent:
    """One agent's hook file: where, the event, loopkit's words, matcher and timeout."""

    folder: str
    file: str
    event: str
    words: tuple[str, ...]
    matcher: str
    timeout: int
    extra: tuple[tuple[str, str], ...]


AGENTS = {
    "codex": Agent(".codex", "hooks.json", "PreToolUse", ("hook", "codex", "pretooluse"),
                   "Bash|apply_patch|mcp__.*", 600, (("statusMessage", "loopkit gate"),)),
    "gemini": Agent(".gemini", "settings.json", "BeforeTool", ("hook", "gemini", "beforetool"),
                    "run_shell_command|write_file|replace|mcp_.*", 600_000,
                    (("name", "loopkit-gate"),)),
}  # fmt: skip
NOTIFY = ("hook", "codex", "notify")


def hooks_path(agent: str, root: Path, user: bool) -> Path:
    spec = AGENTS[agent]
    return (Path.home() if user else root) / spec.folder / spec.file


def ours(text: object, words: tuple[str, ...]) -> list[str] | None:
    """The program words when ``text`` runs loopkit's ``words`` (any path, ``-m loopkit``)."""
    if not isinstance(text, str):
        return None
    try:
        argv = shlex.split(text)
    except ValueError:
        return None
    if len(argv) <= len(words) or tuple(argv[-len(words) :]) != words:
        return None
    head = argv[: -len(words)]
    return (
        head if os.path.basename(head[0]) == "loopkit" or head[1:3] == ["-m", "loopkit"] else None
    )


def install(
    agent: str, root: Path, *, user: bool = False, start: list[str] | None = None
) -> list[str]:
    """Merge loopkit's hook (and for Codex its notify program); ``path: what`` per change."""
    start = start or program()
    spec = AGENTS[agent]
    path = hooks_path(agent, root, user)
    changed = [f"{path}: {line}" for line in _merge_hooks(path, spec, start)]
    if agent == "codex":
        config = codex_home() / "config.toml"
        changed += [f"{config}: {line}" for line in _merge_notify(config, start)]
    return changed


def codex_home() -> Path:
    """Where Codex keeps its user config: ``$CODEX_HOME``, else ``~/.codex``."""
    given = os.environ.get("CODEX_HOME", "").strip()
    return Path(given) if given else Path.home() / ".codex"


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        loaded = readfile.json_document(readfile.read_text(path))
    except readfile.JSONProblem as exc:
        raise ConfigError(f"{exc.where(path)}: {exc.reason}; fix it, then run this again") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc}); fix it, then run this again") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: not a JSON object; fix it, then run this again")
    return loaded


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomicfile.write_text(path, text)
    except OSError as exc:
        raise WorkspaceError(atomicfile.failure(exc, path)) from None


def _merge_hooks(path: Path, spec: Agent, start: list[str]) -> list[str]:
    settings = _read_json(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f'{path}: "hooks" is not an object; fix it, then run this again')
    groups = hooks.setdefault(spec.event, [])
    if not isinstance(groups, list):
        raise ConfigError(f"{path}: hooks.{spec.event} is not a list; fix it, then run this again")
    wanted = shlex.join([*start, *spec.words])
    changed, found = [], False
    for entry in _entries(groups):
        head = ours(entry.get("command"), spec.words) or wrapped_head(
            entry.get("command"), spec.words
        )
        if head is None:
            continue
        found = True
        fresh = shlex.join([*start, *_options(head), *spec.words])
        if entry["command"] != fresh:
            changed.append(f"updated {spec.event}: {entry['command']} -> {fresh}")
            entry["command"] = fresh
        if entry.get("timeout") != spec.timeout:
            changed.append(
                f"updated {spec.event} timeout: {entry.get('timeout')} -> {spec.timeout}"
            )
            entry["timeout"] = spec.timeout
    if not found:
        hook = {"type": "command", "command": wanted, "timeout": spec.timeout, **dict(spec.extra)}
        groups.append({"matcher": spec.matcher, "hooks": [hook]})
        changed.append(f"added {spec.event}: {wanted}")
    if changed:
        _write(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
    return changed


_NOTIFY_LINE = re.compile(r"(?m)^notify\s*=.*$")


def _merge_notify(path: Path, start: list[str]) -> list[str]:
    """``notify = [<loopkit>, "hook", "codex", "notify"]`` at the top level of ``path``."""
    import tomllib

    try:
        text = readfile.read_text(path) if path.exists() else ""
        current = tomllib.loads(text).get("notify")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc}); fix it, then run this again") from None
    argv = [*start, *NOTIFY]
    line = "notify = " + json.dumps(argv, ensure_ascii=False)
    if current is None:
        # A top-level key goes before the first table; the rest of the file is kept as it is.
        head = re.search(r"(?m)^[ \t]*\[", text)
        if head:
            fresh = text[: head.start()] + line + "\n\n" + text[head.start() :]
        else:
            fresh = text + ("\n" if text and not text.endswith("\n") else "") + line + "\n"
        if tomllib.loads(fresh) != {**tomllib.loads(text), "notify": argv}:
            raise ConfigError(f"{path}: cannot add `{line}` safely; add it at the top yourself")
        _write(path, fresh)
        return [f"added notify: {shlex.join(argv)}"]
    theirs = current if isinstance(current, list) else []
    if theirs and ours(shlex.join(str(w) for w in theirs), NOTIFY) is not None:
        if theirs == argv:
            return []
        single = _NOTIFY_LINE.findall(text)
        if len(single) == 1 and tomllib.loads(single[0]).get("notify") == theirs:
            _write(path, _NOTIFY_LINE.sub(lambda _: line, text, count=1))
            return [f"updated notify: {shlex.join(str(w) for w in theirs)} -> {shlex.join(argv)}"]
    return [
        f"kept notify = {current!r}: Codex runs one notify program; to be told of finished "
        f"turns, have it also run `{shlex.join(argv)} '<payload>'`"
    ]
