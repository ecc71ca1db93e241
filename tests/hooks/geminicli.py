"""What Gemini CLI does with its BeforeTool command hooks, as strict as Gemini CLI.

Follows google-gemini/gemini-cli's source (``packages/core/src/hooks/hookRunner.ts``,
``hookPlanner.ts``, ``hookAggregator.ts``, ``types.ts``, ``core/coreToolHookTriggers.ts``)
and https://geminicli.com/docs/hooks/reference:

- ``hooks.BeforeTool`` in ``.gemini/settings.json`` (project; a trusted folder) and
  ``~/.gemini/settings.json``: groups whose ``matcher`` is a regular expression tested
  against the tool's name (``new RegExp(m).test(name)``: found anywhere); none, ``""`` or
  ``"*"``: all; a matcher that is no regex must equal the name.
- each ``"type": "command"`` hook runs as ``bash -c <command>`` in the session's folder with
  ``GEMINI_PROJECT_DIR``, ``GEMINI_CWD``, ``GEMINI_SESSION_ID`` and ``CLAUDE_PROJECT_DIR``
  set and the event's JSON on stdin, for at most ``timeout`` *milliseconds* (default
  60000); a timed-out hook has no output, and the call runs.
- the output read is stdout, else stderr (trimmed): JSON is the decision; plain text is
  ``allow`` after exit 0 or 1, ``deny`` with the text as the reason after any other exit;
  nothing at all (exit 2 with empty stderr included) is no decision.
- ``decision`` ``deny``/``block`` blocks the call with ``stopReason || reason || "No reason
  provided"`` sent to the model; ``continue: false`` stops the agent.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_MS = 60_000


def handlers(root: Path, home: Path, tool_name: str) -> list[dict[str, Any]]:
    found = []
    for path in (root / ".gemini" / "settings.json", home / ".gemini" / "settings.json"):
        if not path.is_file():
            continue
        for group in json.loads(path.read_text()).get("hooks", {}).get("BeforeTool", []):
            matcher = (group.get("matcher") or "").strip()
            if matcher not in ("", "*"):
                try:
                    if not re.search(matcher, tool_name):
                        continue
                except re.error:
                    if matcher != tool_name:
                        continue
            found += [h for h in group.get("hooks", []) if h.get("type") == "command"]
    return found


def _output(stdout: str, stderr: str, code: int) -> dict[str, Any] | None:
    text = stdout.strip() or stderr.strip()
    if not text:
        return None
    try:
        parsed = json.loads(text)
        if isinstance(parsed, str):
            parsed = json.loads(parsed)
        if isinstance(parsed, dict):
            return parsed
    except ValueError:
        pass
    if code in (0, 1):
        return {"decision": "allow", "systemMessage": text}
    return {"decision": "deny", "reason": text}


def beforetool(
    root: Path, home: Path, event: dict[str, Any], env: dict[str, str]
) -> tuple[str, str, list[dict[str, Any]]]:
    """Every matching BeforeTool hook, run as Gemini CLI runs it: ``("deny", reason)``,
    ``("stop", reason)`` or ``("allow", "")``, and each hook's output."""
    outputs = []
    for hook in handlers(root, home, event["tool_name"]):
        seconds = float(hook.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000
        cwd = event["cwd"]
        extra = {"GEMINI_PROJECT_DIR": cwd, "GEMINI_CWD": cwd, "CLAUDE_PROJECT_DIR": cwd,
                 "GEMINI_SESSION_ID": event["session_id"]}  # fmt: skip
        try:
            done = subprocess.run(
                ["bash", "-c", hook["command"]], input=json.dumps(event), cwd=event["cwd"],
                env={**env, **extra, "HOME": str(home)}, capture_output=True, text=True,
                timeout=seconds,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            continue  # no output: no decision
        output = _output(done.stdout, done.stderr, done.returncode)
        if output is not None:
            outputs.append(output)
    for output in outputs:
        if output.get("continue") is False:
            return "stop", str(output.get("stopReason") or output.get("reason") or ""), outputs
    for output in outputs:
        if output.get("decision") in ("deny", "block"):
            why = output.get("stopReason") or output.get("reason") or "No reason provided"
            return "deny", str(why), outputs
    return "allow", "", outputs


def timeouts(root: Path, home: Path, tool_name: str) -> list[float]:
    """The seconds Gemini CLI gives each matching hook."""
    return [
        float(h.get("timeout", DEFAULT_TIMEOUT_MS)) / 1000 for h in handlers(root, home, tool_name)
    ]


def event(root: Path, tool_name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """The BeforeTool stdin of ``hookEventHandler.ts`` (``BeforeToolInput``)."""
    return {
        "session_id": "3f1c2b7e-5d4a-4c1b-9e8f-7a6b5c4d3e2f",
        "transcript_path": str(root / ".gemini" / "chat.json"),
        "cwd": str(root),
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-03T21:00:00.000Z",
        "tool_name": tool_name,
        "tool_input": tool_input,
    }
