"""What Codex does with its command hooks and its notify program, as strict as Codex.

Follows openai/codex's source (``codex-rs/hooks/src/engine/discovery.rs``,
``engine/command_runner.rs``, ``engine/output_parser.rs``, ``events/pre_tool_use.rs``,
``legacy_notify.rs``) and https://developers.openai.com/codex/hooks:

- ``hooks.json`` beside a config layer — ``<project>/.codex/hooks.json`` and
  ``~/.codex/hooks.json`` — holds ``{"hooks": {"PreToolUse": [group, …]}}``; a group's
  ``matcher`` (``events/common.rs``: ``matches_matcher``) is checked against the tool's name
  and its aliases (``apply_patch`` answers to ``Write`` and ``Edit`` too): none, ``""`` or
  ``"*"`` match all; one made only of letters, digits, ``_`` and ``|`` is a list of exact
  names; any other is a regular expression found in the name (an invalid one: nothing).
- each ``"type": "command"`` hook runs as ``$SHELL -lc <command>`` in the session's folder,
  the event's JSON on stdin, for at most ``timeout`` (or ``timeoutSec``) *seconds*, default
  600; a timeout is a failed hook, and the call runs.
- exit 0: empty stdout, no decision. JSON: ``continue: false``, ``stopReason`` or
  ``suppressOutput`` make it invalid; with ``hookSpecificOutput`` (``permissionDecision`` /
  ``permissionDecisionReason`` / ``updatedInput``) ``deny`` needs a non-empty reason,
  ``ask`` is unsupported, ``allow`` is unsupported without ``updatedInput``; without it the
  legacy ``decision: "block"`` needs a reason and ``"approve"`` is unsupported. An invalid
  output is a *failed* hook: the call runs.
- exit 2 with a reason on stderr blocks; exit 2 with an empty stderr, and any other exit,
  is a failed hook: the call runs.
- ``notify = [argv…]`` at the top of ``config.toml``: run with the JSON payload appended as
  the last argument, stdin/stdout/stderr null, not waited for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ALIASES = {"apply_patch": ("Write", "Edit")}


@dataclass
class Outcome:
    """What Codex makes of the hooks: ``blocked`` with ``reason``, and each hook's status
    (``completed``, ``blocked``, ``failed``) with its error, if any."""

    blocked: bool = False
    reason: str = ""
    statuses: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stdouts: list[str] = field(default_factory=list)


def matches(matcher: str | None, name: str) -> bool:
    if matcher is None or matcher in ("", "*"):
        return True
    if re.fullmatch(r"[A-Za-z0-9_|]+", matcher):
        return name in matcher.split("|")
    try:
        return re.search(matcher, name) is not None
    except re.error:
        return False


def handlers(root: Path, home: Path, tool_name: str) -> list[dict[str, Any]]:
    found = []
    for path in (home / ".codex" / "hooks.json", root / ".codex" / "hooks.json"):
        if not path.is_file():
            continue
        for group in json.loads(path.read_text()).get("hooks", {}).get("PreToolUse", []):
            matcher = group.get("matcher")
            names = (tool_name, *ALIASES.get(tool_name, ()))
            if not any(matches(matcher, name) for name in names):
                continue
            found += [h for h in group.get("hooks", []) if h.get("type") == "command"]
    return found


def _parse(stdout: str) -> tuple[str, str]:
    """(status, reason or error) of a hook that exited 0, as ``output_parser.rs`` has it."""
    text = stdout.strip()
    if not text:
        return "completed", ""
    try:
        out = json.loads(text)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        return ("failed", "invalid JSON output") if text[0] in "{[" else ("completed", "")
    if out.get("continue") is False or "stopReason" in out or out.get("suppressOutput"):
        return "failed", "unsupported universal field"
    specific = out.get("hookSpecificOutput") or {}
    keys = ("permissionDecision", "permissionDecisionReason", "updatedInput")
    if any(specific.get(k) is not None for k in keys):
        decision = specific.get("permissionDecision")
        reason = str(specific.get("permissionDecisionReason") or "").strip()
        if specific.get("updatedInput") is not None and decision != "allow":
            return "failed", "updatedInput without permissionDecision:allow"
        if decision == "allow" and specific.get("updatedInput") is None:
            return "failed", "unsupported permissionDecision:allow"
        if decision == "ask":
            return "failed", "unsupported permissionDecision:ask"
        if decision == "deny":
            return ("blocked", reason) if reason else ("failed", "deny without a reason")
        if decision is None:
            return "failed", "permissionDecisionReason without permissionDecision"
        return "failed", f"unknown permissionDecision {decision!r}"
    decision, reason = out.get("decision"), str(out.get("reason") or "").strip()
    if decision == "approve":
        return "failed", "unsupported decision:approve"
    if decision == "block":
        return ("blocked", reason) if reason else ("failed", "block without a reason")
    if "reason" in out:
        return "failed", "reason without decision"
    return "completed", ""


def pretooluse(root: Path, home: Path, event: dict[str, Any], env: dict[str, str]) -> Outcome:
    """Every matching PreToolUse hook, run as Codex runs it; what Codex makes of them."""
    outcome = Outcome()
    for hook in handlers(root, home, event["tool_name"]):
        seconds = max(1, int(hook.get("timeout", hook.get("timeoutSec", 600))))
        shell = env.get("SHELL", "/bin/sh")
        try:
            done = subprocess.run(
                [shell, "-lc", hook["command"]], input=json.dumps(event), cwd=event["cwd"],
                env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=seconds,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            outcome.statuses.append("failed")
            outcome.errors.append(f"hook timed out after {seconds}s")
            continue
        outcome.stdouts.append(done.stdout)
        if done.returncode == 0:
            status, said = _parse(done.stdout)
        elif done.returncode == 2 and done.stderr.strip():
            status, said = "blocked", done.stderr.strip()
        else:
            status, said = "failed", f"hook exited with code {done.returncode}"
        outcome.statuses.append(status)
        if status == "blocked":
            outcome.blocked = True
            outcome.reason = outcome.reason or said
        elif status == "failed":
            outcome.errors.append(said)
    return outcome


def notify(root: Path, payload: dict[str, Any], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the ``notify`` program of ``$CODEX_HOME/config.toml`` as Codex does (the user's
    config: a project's ``notify`` is not read)."""
    home = Path(env.get("CODEX_HOME") or Path(env["HOME"]) / ".codex")
    argv = tomllib.loads((home / "config.toml").read_text())["notify"]
    return subprocess.Popen(
        [*argv, json.dumps(payload)], cwd=root, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def event(root: Path, tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """The PreToolUse stdin of ``events/pre_tool_use.rs`` (``PreToolUseCommandInput``)."""
    return {
        "session_id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        "turn_id": "1",
        "transcript_path": None,
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "model": "gpt-5-codex",
        "permission_mode": "workspace-write",
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": "call_1",
    }


def shell_env(env: dict[str, str]) -> dict[str, str]:
    return {**env, "SHELL": os.environ.get("SHELL", "/bin/sh")}
