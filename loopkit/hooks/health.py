"""Do loopkit's installed hooks run? (``loopkit doctor``, SPEC sections 17 and 18)

Claude Code runs a command hook in a shell; exit 2 blocks the call, and any other failure —
127 when the program is not found, 126 when it cannot run, a crash — is a non-blocking
error after which the call proceeds (Claude Code's hooks reference,
https://docs.anthropic.com/en/docs/claude-code/hooks, "Exit code output"). A gate that
cannot start lets every call through, silently. So each command of loopkit's found in the
settings Claude Code reads for this project is run once, as Claude Code would run it:

- ``PreToolUse``: with a PreToolUse event for a call no rule of this workspace holds (it must
  exit 0 with no output). Nothing is asked and nothing is written.
- any other (``Notification``), or when every probe call would be held: the command's
  program with ``--version`` (a notification could reach the phone).

A command that names ``loopkit`` without a path runs where PATH finds it, which Claude Code's
PATH may not: it is reported too. So is a hook wrapped in a longer shell line (``… || true``,
``… | tee log``): it may run, but its deny is lost — ``|| true`` turns exit 2 into 0 — and
the call goes ahead; it is not run, and ``loopkit hook install`` writes it as loopkit's
alone. Codex's and Gemini CLI's gate hooks (``.codex/hooks.json``,
``.gemini/settings.json``) fail open the same way and are run the same way.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess

from loopkit import readfile
from loopkit.datarecord import record
from loopkit.hooks import codextrust, geminitrust
from loopkit.hooks.agentconfig import AGENTS
from loopkit.hooks.agentconfig import ours as runs_ours
from loopkit.hooks.gateconfig import load_rules
from loopkit.hooks.install import EVENTS, ours, wrapped_head
from loopkit.hooks.rules import match

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

TIMEOUT = 30.0
FIX = "run `loopkit hook install claude` (with --user for your home's) to write loopkit's path"


@record(frozen=True, slots=True)
class Installed:
    """One command hook of loopkit's in a settings file."""

    settings: Path
    event: str
    command: str
    program: list[str]
    agent: str = "claude"
    wrapped: bool = False  # inside a longer shell line that can lose its deny


@record(frozen=True, slots=True)
class Health:
    ok: bool
    text: str


def settings_files(root: Path, home: Path) -> list[Path]:
    """The settings files Claude Code reads for a project at ``root``."""
    project = root / ".claude"
    return [project / "settings.json", project / "settings.local.json",
            home / ".claude" / "settings.json"]  # fmt: skip


def installed(files: list[Path]) -> list[Installed]:
    """loopkit's command hooks in ``files`` (unreadable files and odd shapes are skipped)."""
    found: list[Installed] = []
    for path in files:
        try:
            data = readfile.json_document(readfile.read_text(path))
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for event, groups in hooks.items() if isinstance(hooks, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                entries = group.get("hooks") if isinstance(group, dict) else None
                for entry in entries if isinstance(entries, list) else ():
                    text = entry.get("command") if isinstance(entry, dict) else None
                    seen = ours(text)
                    if isinstance(text, str) and seen is not None and seen[0] == event:
                        found.append(Installed(path, event, text, seen[1]))
                    elif isinstance(text, str) and event in EVENTS:
                        head = wrapped_head(text, EVENTS[event][0])
                        if head is not None:
                            found.append(Installed(path, event, text, head, wrapped=True))
    return found


def installed_agents(root: Path, home: Path) -> list[Installed]:
    """loopkit's gate hooks in Codex's and Gemini CLI's files of this project and of ``home``."""
    found: list[Installed] = []
    for agent, spec in AGENTS.items():
        for base in (root, home):
            path = base / spec.folder / spec.file
            try:
                data = readfile.json_document(readfile.read_text(path))
            except (OSError, ValueError):
                continue
            hooks = data.get("hooks") if isinstance(data, dict) else None
            groups = hooks.get(spec.event) if isinstance(hooks, dict) else None
            for group in groups if isinstance(groups, list) else ():
                entries = group.get("hooks") if isinstance(group, dict) else None
                for entry in entries if isinstance(entries, list) else ():
                    text = entry.get("command") if isinstance(entry, dict) else None
                    head = runs_ours(text, spec.words)
                    if isinstance(text, str) and head is not None:
                        found.append(Installed(path, spec.event, text, head, agent))
                    elif isinstance(text, str):
                        head = wrapped_head(text, spec.words)
                        if head is not None:
                            found.append(Installed(path, spec.event, text, head, agent, True))
    return found


def _probe_event(root: Path) -> dict[str, object] | None:
    """A PreToolUse event for a call no rule of this workspace holds, or None."""
    rules = load_rules(str(root))
    for tool, tool_input in (
        ("Read", {"file_path": str(root / "loopkit.toml")}),
        ("Bash", {"command": "true", "description": "loopkit doctor: is the hook there?"}),
        ("Glob", {"pattern": "loopkit.toml"}),
    ):
        if match(rules, tool, tool_input, str(root)) is None:
            return {
                "session_id": "loopkit-doctor",
                "cwd": str(root),
                "hook_event_name": "PreToolUse",
                "permission_mode": "default",
                "tool_name": tool,
                "tool_input": tool_input,
                "tool_use_id": "loopkit-doctor",
            }
    return None


def check(hook: Installed, root: Path) -> Health:
    """Run ``hook`` once as Claude Code would, in ``root``; what came of it."""
    event = _probe_event(root) if hook.event in ("PreToolUse", "BeforeTool") else None
    if event is not None:
        event["hook_event_name"] = hook.event
    command = hook.command if event is not None else shlex.join([*hook.program, "--version"])
    where = f"{hook.settings} {hook.event}"
    fix = FIX.replace("install claude", f"install {hook.agent}")
    if hook.wrapped:
        return Health(
            False,
            f"{where}: `{hook.command}` runs loopkit's hook inside a longer shell line: its "
            "deny can be lost (`|| true` turns its exit 2 into 0, a redirected stdout drops its "
            "answer) and the call goes ahead; make it loopkit's command alone: "
            + fix.replace("to write loopkit's path", "rewrites it"),
        )
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(root)}
    for name in ("LOOPKIT_WORKSPACE", "LOOPKIT_AGENT_SESSION"):
        env.pop(name, None)
    try:
        done = subprocess.run(
            command,
            shell=True,
            input=json.dumps(event) if event is not None else "",
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return Health(False, f"{where}: `{command}` did not finish in {TIMEOUT:g} s; {fix}")
    except OSError as exc:
        return Health(False, f"{where}: `{command}` cannot run ({exc.strerror}); {fix}")
    said = (done.stderr.strip().splitlines() or [""])[-1][:200]
    if done.returncode != 0 or (event is not None and done.stdout.strip()):
        outcome = (
            "every call goes ahead unchecked" if done.returncode != 2 else "every call is denied"
        )
        text = f"`{command}` exited {done.returncode}" + (f" ({said})" if said else "")
        return Health(False, f"{where}: {text}: {outcome}; {fix}")
    if not os.path.isabs(hook.program[0]):
        return Health(
            False,
            f"{where}: `{hook.command}` runs here, but names {hook.program[0]!r} without a path: "
            f"where the agent's PATH lacks it the hook exits 127 and the call runs; {fix}",
        )
    how = "a call no rule holds goes ahead" if event is not None else "--version answers"
    return Health(True, f"{where}: `{hook.command}` runs ({how})")


def trust(agents: set[str], root: Path) -> list[Health]:
    """Whether each agent will load loopkit's hooks here at all, as the agent decides it:
    Codex (a trusted project, loopkit's hook trusted: its own hook list) and Gemini CLI (a
    trusted folder)."""
    found = []
    if "codex" in agents:
        found.append(Health(*codextrust.check(root)))
    if "gemini" in agents:
        found.append(Health(*geminitrust.check(root)))
    return found
