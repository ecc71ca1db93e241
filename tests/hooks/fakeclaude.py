"""A fake ``claude`` executable: ``claude -p`` as loopkit runs it, as strict as Claude Code.

Run as ``python fakeclaude.py -p [PROMPT] [--resume ID] [--output-format json]
[--permission-mode MODE]``. What the model "does" is a script (``FAKE_CLAUDE_SCRIPT``, JSON):
``{"sessions": [[episode, …], …]}`` — the n-th new session follows ``sessions[n]``; its
k-th invocation (the first run, then each ``--resume``) plays ``episode[k]``, a list of
turns; a turn is a list of tool calls ``{"tool": NAME, "input": {...}}`` made at once, or
``{"fail": ERROR_TYPE}`` (the API fails). Sessions live in ``FAKE_CLAUDE_HOME``
(``sessions/<id>.json``: the transcript — prompts, tool calls and what became of them);
every invocation is logged to ``calls.jsonl`` there.

Per Claude Code's documentation — the hooks reference (https://code.claude.com/docs/en/hooks:
"Configuration", "Hook input", "Exit code output", "PreToolUse decision control", "Defer a
tool call for later", "PermissionRequest", "PermissionRequest decision control",
"Permission update entries", "StopFailure", the ``AskUserQuestion`` tool input), the
headless docs (https://code.claude.com/docs/en/headless: ``-p``, ``--resume``,
``--output-format json``) and the permissions page (modes, allow rules):

- hooks come from ``.claude/settings.json`` and ``.claude/settings.local.json``; a matcher is
  a regular expression over the tool name (StopFailure: exact names joined by ``|``); no
  matcher, ``""`` or ``*``: all. Each runs in a shell in the project folder with its JSON on
  stdin, for at most its ``timeout``;
- PreToolUse: exit 2 denies (stderr is the reason Claude reads); any other non-zero exit, a
  timeout or a hook that cannot start is a non-blocking error and the call goes on; exit 0
  with JSON decides: of several hooks ``deny > defer > ask > allow``; ``updatedInput``
  replaces the input;
- ``defer`` is honoured only in ``-p`` mode and only when the turn has a single tool call:
  the process exits at once with ``stop_reason: "tool_deferred"`` and ``deferred_tool_use``;
  in a turn of several calls it is ignored (a warning) and the call takes the normal
  permission flow. ``--resume`` fires PreToolUse again for the deferred call first;
- the normal permission flow: ``allow`` from a hook, ``bypassPermissions`` mode, or an allow
  rule (``Tool`` or ``Tool(content)``) runs the call; otherwise the dialog would be shown:
  PermissionRequest hooks fire (``permission_suggestions`` offers an allow rule for the exact
  call); ``behavior: "allow"`` runs it and applies ``updatedPermissions`` (``addRules`` to
  ``localSettings`` is written to ``.claude/settings.local.json``); ``deny`` denies with
  ``message``; no decision in ``-p`` mode is a denial (there is nobody to ask). Every denied
  call is listed in ``permission_denials``;
- ``AskUserQuestion`` runs only when a hook allowed it with ``updatedInput`` holding
  ``answers``; ``allow`` alone is not enough;
- an API failure fires StopFailure (``error``, ``error_details``,
  ``last_assistant_message``; its output and exit code ignored) and ends with an error result;
- ``--resume`` of an unknown session: ``No conversation found with session ID: …`` on
  stderr, exit 1, no result; ``--resume`` does not restore the permission mode (pass it);
- the result (``--output-format json``) is one JSON object: ``type``, ``subtype``,
  ``is_error``, ``num_turns``, ``result``, ``session_id``, ``total_cost_usd``,
  ``permission_denials``, ``stop_reason`` (and ``deferred_tool_use`` on a defer).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

ORDER = ("deny", "defer", "ask", "allow", "proceed")
COST_PER_TURN = 0.0125


def _settings(cwd: Path) -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for name in ("settings.json", "settings.local.json"):
        path = cwd / ".claude" / name
        if path.exists():
            found.append((path, json.loads(path.read_text())))
    return found


def _matches(event_name: str, matcher: str | None, value: str) -> bool:
    if not matcher or matcher == "*":
        return True
    if event_name == "StopFailure":
        return value in matcher.split("|")
    return re.fullmatch(matcher, value) is not None


def fire(cwd: Path, event_name: str, event: dict[str, Any], on: str) -> list[tuple[int, Any, str]]:
    """Every hook for ``event_name`` whose matcher fits ``on``, run: (exit, JSON, stderr)."""
    answers = []
    for _, settings in _settings(cwd):
        for group in settings.get("hooks", {}).get(event_name, []):
            if not _matches(event_name, group.get("matcher"), on):
                continue
            for hook in group.get("hooks", []):
                if hook.get("type") != "command":
                    continue
                try:
                    done = subprocess.run(
                        hook["command"],
                        shell=True,
                        input=json.dumps(event),
                        cwd=cwd,
                        env={**os.environ, "CLAUDE_PROJECT_DIR": str(cwd)},
                        capture_output=True,
                        text=True,
                        timeout=float(hook.get("timeout", 60)),
                    )
                except subprocess.TimeoutExpired:
                    answers.append((124, None, "timed out"))  # non-blocking
                    continue
                try:
                    output = json.loads(done.stdout) if done.stdout.strip() else None
                except ValueError:
                    output = None
                answers.append((done.returncode, output, done.stderr.strip()))
    return answers


def pretooluse(cwd: Path, event: dict[str, Any]) -> tuple[str, str, Any]:
    """(decision, reason, updatedInput) of the PreToolUse hooks, the strictest winning."""
    best = ("proceed", "", None)
    for code, output, stderr in fire(cwd, "PreToolUse", event, event["tool_name"]):
        if code == 2:
            answer = ("deny", stderr, None)
        elif code != 0 or not isinstance(output, dict):
            continue  # a non-blocking error, or no decision
        else:
            specific = output.get("hookSpecificOutput") or {}
            decision = specific.get("permissionDecision")
            if decision not in ORDER:
                continue
            answer = (
                decision,
                str(specific.get("permissionDecisionReason") or ""),
                specific.get("updatedInput"),
            )
        if ORDER.index(answer[0]) < ORDER.index(best[0]):
            best = answer
    return best


def permission_request(cwd: Path, event: dict[str, Any]) -> dict[str, Any] | None:
    """The first PermissionRequest hook's decision (exit 2: deny), else None."""
    for code, output, stderr in fire(cwd, "PermissionRequest", event, event["tool_name"]):
        if code == 2:
            return {"behavior": "deny", "message": stderr}
        if code == 0 and isinstance(output, dict):
            decision = (output.get("hookSpecificOutput") or {}).get("decision")
            if isinstance(decision, dict) and decision.get("behavior") in ("allow", "deny"):
                return decision
    return None


def _allowed_by_rule(cwd: Path, tool: str, tool_input: dict[str, Any]) -> bool:
    content = str(tool_input.get("command") or tool_input.get("file_path") or "")
    for _, settings in _settings(cwd):
        for rule in settings.get("permissions", {}).get("allow", []):
            if rule == tool or rule == f"{tool}({content})":
                return True
    return False


def _apply(cwd: Path, updates: list[dict[str, Any]]) -> None:
    for update in updates:
        if update.get("type") != "addRules" or update.get("behavior") != "allow":
            continue
        name = {"localSettings": "settings.local.json", "projectSettings": "settings.json"}.get(
            str(update.get("destination"))
        )
        if name is None:
            continue
        path = cwd / ".claude" / name
        data = json.loads(path.read_text()) if path.exists() else {}
        allow = data.setdefault("permissions", {}).setdefault("allow", [])
        for rule in update.get("rules", []):
            text = rule["toolName"] + (
                f"({rule['ruleContent']})" if rule.get("ruleContent") else ""
            )
            if text not in allow:
                allow.append(text)
        path.write_text(json.dumps(data, indent=2))


class Session:
    def __init__(self, home: Path, cwd: Path, mode: str, data: dict[str, Any]) -> None:
        self.home, self.cwd, self.mode, self.data = home, cwd, mode, data
        self.denials: list[dict[str, Any]] = []
        self.turns = 0

    @property
    def id(self) -> str:
        return str(self.data["session_id"])

    def save(self) -> None:
        path = self.home / "sessions" / f"{self.id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.data, indent=2))

    def note(self, **entry: Any) -> None:
        self.data["transcript"].append(entry)

    def common(self, event_name: str) -> dict[str, Any]:
        return {
            "session_id": self.id,
            "transcript_path": str(self.home / "sessions" / f"{self.id}.jsonl"),
            "cwd": str(self.cwd),
            "permission_mode": self.mode,
            "hook_event_name": event_name,
        }

    def call(self, call: dict[str, Any], *, alone: bool) -> str:
        """One tool call through hooks and permissions: ran, denied or deferred."""
        tool, tool_input = call["tool"], call["input"]
        call_id = call.setdefault("id", f"toolu_{uuid.uuid4().hex[:12]}")
        event = {
            **self.common("PreToolUse"),
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": call_id,
        }
        decision, reason, updated = pretooluse(self.cwd, event)
        if decision == "defer":
            if alone:
                self.data["pending"] = call
                self.note(tool=tool, id=call_id, input=tool_input, outcome="deferred")
                return "deferred"
            sys.stderr.write("warning: defer ignored: several tool calls in this turn\n")
            decision = "proceed"
        if decision == "deny":
            return self.deny(call, reason)
        if isinstance(updated, dict):
            tool_input = updated
        allowed = decision == "allow"
        if not allowed and decision != "ask":
            allowed = self.mode == "bypassPermissions" or _allowed_by_rule(
                self.cwd, tool, tool_input
            )
        if not allowed:
            suggestion = {
                "type": "addRules",
                "rules": [
                    {
                        "toolName": tool,
                        "ruleContent": str(
                            tool_input.get("command") or tool_input.get("file_path") or ""
                        ),
                    }
                ],
                "behavior": "allow",
                "destination": "localSettings",
            }
            asked = {
                **self.common("PermissionRequest"),
                "tool_name": tool,
                "tool_input": tool_input,
                "permission_suggestions": [suggestion],
            }
            verdict = permission_request(self.cwd, asked)
            if verdict is None:
                return self.deny(call, "no one to ask in -p mode: permission denied")
            if verdict["behavior"] == "deny":
                return self.deny(call, str(verdict.get("message") or "denied"))
            _apply(self.cwd, verdict.get("updatedPermissions") or [])
            if isinstance(verdict.get("updatedInput"), dict):
                tool_input = verdict["updatedInput"]
        return self.run(call, tool_input)

    def deny(self, call: dict[str, Any], reason: str) -> str:
        self.denials.append(
            {"tool_name": call["tool"], "tool_use_id": call["id"], "tool_input": call["input"]}
        )
        self.note(
            tool=call["tool"], id=call["id"], input=call["input"], outcome="denied", reason=reason
        )
        return "denied"

    def run(self, call: dict[str, Any], tool_input: dict[str, Any]) -> str:
        tool = call["tool"]
        if tool == "AskUserQuestion":
            if not isinstance(tool_input.get("answers"), dict):
                return self.deny(call, "AskUserQuestion needs a user: no answers in -p mode")
            self.note(
                tool=tool,
                id=call["id"],
                input=tool_input,
                outcome="ran",
                answers=tool_input["answers"],
            )
            return "ran"
        if tool == "Bash":
            done = subprocess.run(
                tool_input["command"],
                shell=True,
                cwd=self.cwd,
                capture_output=True,
                text=True,
                timeout=60,
            )
            output = (done.stdout + done.stderr)[-500:]
        elif tool in ("Write", "Edit"):
            Path(tool_input["file_path"]).write_text(str(tool_input.get("content", "")))
            output = "written"
        else:
            output = "ok"
        self.note(tool=tool, id=call["id"], input=tool_input, outcome="ran", output=output)
        return "ran"


def result(session: Session, **fields: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1,
        "num_turns": session.turns,
        "result": "Done.",
        "session_id": session.id,
        "total_cost_usd": round(session.turns * COST_PER_TURN, 6),
        "permission_denials": session.denials,
        "stop_reason": "end_turn",
        **fields,
    }


def main(argv: list[str]) -> int:
    home = Path(os.environ["FAKE_CLAUDE_HOME"])
    script = json.loads(Path(os.environ["FAKE_CLAUDE_SCRIPT"]).read_text())
    cwd = Path.cwd()
    args = iter(argv)
    prompt, resume, mode, json_out = None, None, "default", False
    for arg in args:
        if arg == "-p":
            continue
        if arg == "--resume":
            resume = next(args)
        elif arg == "--permission-mode":
            mode = next(args)
        elif arg == "--output-format":
            json_out = next(args) == "json"
        else:
            prompt = arg
    stdin = "" if sys.stdin.isatty() else sys.stdin.read()
    prompt = prompt if prompt is not None else stdin
    home.mkdir(parents=True, exist_ok=True)
    with (home / "calls.jsonl").open("a") as calls:
        calls.write(
            json.dumps(
                {
                    "argv": argv,
                    "resume": resume,
                    "stdin": stdin,
                    "LOOPKIT_DECISION": os.environ.get("LOOPKIT_DECISION"),
                }
            )
            + "\n"
        )
    if resume is not None:
        path = home / "sessions" / f"{resume}.json"
        if not path.exists():
            sys.stderr.write(f"No conversation found with session ID: {resume}\n")
            return 1
        session = Session(home, cwd, mode, json.loads(path.read_text()))
    else:
        counter = home / "sessions-started"
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        session = Session(
            home,
            cwd,
            mode,
            {
                "session_id": str(uuid.uuid4()),
                "script": n,
                "episode": 0,
                "turn": 0,
                "pending": None,
                "transcript": [],
            },
        )
    session.note(prompt=prompt, resumed=resume is not None)
    sessions = script["sessions"]
    episodes = sessions[session.data["script"]] if session.data["script"] < len(sessions) else []
    pending = session.data.get("pending")
    if pending is not None:  # the deferred call fires PreToolUse again, first
        session.data["pending"] = None
        session.turns += 1
        if session.call(pending, alone=True) == "deferred":
            session.save()
            return _print(
                session,
                json_out,
                stop_reason="tool_deferred",
                deferred_tool_use={
                    "id": pending["id"],
                    "name": pending["tool"],
                    "input": pending["input"],
                },
            )
        session.data["turn"] += 1
    episode = session.data["episode"]
    turns = episodes[episode] if episode < len(episodes) else []
    while session.data["turn"] < len(turns):
        turn = turns[session.data["turn"]]
        session.turns += 1
        if isinstance(turn, dict) and "fail" in turn:
            error = turn["fail"]
            failure = {
                **session.common("StopFailure"),
                "error": error,
                "error_details": turn.get("details", ""),
                "last_assistant_message": f"API Error: {error}",
            }
            fire(cwd, "StopFailure", failure, error)  # output and exit code ignored
            session.data["turn"] += 1
            session.save()
            _print(session, json_out, is_error=True, result=f"API Error: {error}")
            return 1
        assert isinstance(turn, list) and all(isinstance(c, dict) for c in turn), turn
        for call in turn:
            if session.call(call, alone=len(turn) == 1) == "deferred":
                session.save()
                return _print(
                    session,
                    json_out,
                    stop_reason="tool_deferred",
                    deferred_tool_use={
                        "id": call["id"],
                        "name": call["tool"],
                        "input": call["input"],
                    },
                )
        session.data["turn"] += 1
    session.data["episode"], session.data["turn"] = episode + 1, 0
    session.save()
    return _print(session, json_out)


def _print(session: Session, json_out: bool, **fields: Any) -> int:
    if json_out:
        sys.stdout.write(json.dumps(result(session, **fields)) + "\n")
    else:
        sys.stdout.write("Done.\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
