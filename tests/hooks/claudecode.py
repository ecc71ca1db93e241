"""What Claude Code does with loopkit's command hooks, as strict as Claude Code itself.

Per Claude Code's hooks reference (https://docs.anthropic.com/en/docs/claude-code/hooks:
"Configuration", "Hook Input", "Hook Output" — "Exit code output" and "PreToolUse decision
control"):

- ``hooks.PreToolUse`` in the settings file holds groups; a group's ``matcher`` is a
  case-sensitive regular expression over the tool's name (``Write`` matches only Write,
  ``Edit|Write`` either; ``*``, ``""`` or no matcher: every tool);
- each ``"type": "command"`` hook of a matching group runs in a shell, in the project folder,
  with ``CLAUDE_PROJECT_DIR`` set and the event's JSON on stdin, for at most its ``timeout``
  (seconds, default 60);
- exit 0: JSON on stdout decides (``hookSpecificOutput.permissionDecision``: ``allow``,
  ``deny``, ``ask``, ``defer``); no JSON, no decision: the normal permission flow, here
  ``proceed``;
- exit 2: the call is blocked, stderr is the reason given to Claude;
- any other exit — 1, 126, 127 (a command not found), a signal, a timeout — is a
  non-blocking error: it is shown, and the call proceeds;
- of several hooks' answers the strictest wins: deny > defer > ask > allow > proceed.

The whole ``claude -p`` process — defer, resume, PermissionRequest, StopFailure, its JSON
result — is :mod:`fakeclaude`'s.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

ORDER = ("deny", "defer", "ask", "allow", "proceed")


def run_hook(
    command: str, event: dict[str, Any], *, cwd: Path, env: dict[str, str], timeout: float = 60
) -> tuple[str, str]:
    """One command hook's answer: (decision, reason)."""
    try:
        done = subprocess.run(
            command,
            shell=True,
            input=json.dumps(event),
            cwd=cwd,
            env={**env, "CLAUDE_PROJECT_DIR": str(cwd)},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "proceed", "hook timed out (non-blocking)"
    if done.returncode == 2:
        return "deny", done.stderr.strip()
    if done.returncode != 0:
        return "proceed", f"hook error {done.returncode} (non-blocking): {done.stderr.strip()}"
    try:
        output = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        return "proceed", "stdout is not JSON: shown in the transcript, no decision"
    specific = output.get("hookSpecificOutput", {}) if isinstance(output, dict) else {}
    decision = specific.get("permissionDecision")
    if decision in ("allow", "deny", "ask", "defer"):
        return decision, str(specific.get("permissionDecisionReason", ""))
    return "proceed", ""


def pretooluse(
    settings: Path, event: dict[str, Any], *, cwd: Path, env: dict[str, str]
) -> tuple[str, str]:
    """Every PreToolUse hook in ``settings`` whose matcher fits ``event``'s tool, run; the
    strictest answer."""
    groups = json.loads(settings.read_text()).get("hooks", {}).get("PreToolUse", [])
    answers = [("proceed", "")]
    for group in groups:
        matcher = group.get("matcher") or "*"
        if matcher != "*" and not re.fullmatch(matcher, event["tool_name"]):
            continue
        for hook in group.get("hooks", []):
            if hook.get("type") == "command":
                timeout = float(hook.get("timeout", 60))
                answers.append(run_hook(hook["command"], event, cwd=cwd, env=env, timeout=timeout))
    return min(answers, key=lambda answer: ORDER.index(answer[0]))
