"""The Claude Code hooks as Claude Code runs them: JSON on stdin (the hooks reference's
shapes), the installed ``loopkit`` as the command, decisions on stdout."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import claudecode

from loopkit.hooks.install import install, ours, program

from fakeserver import FakeServer
from helpers import LOOPKIT, clean_env, loopkit, phone_env, wait_until, write_config


def event(ws: Path, tool: str, tool_input: object, **extra: object) -> dict[str, object]:
    return {
        "session_id": "sess-1",
        "transcript_path": str(ws / "t.jsonl"),
        "cwd": str(ws),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
        **extra,
    }


def hook(
    ws: Path, payload: object, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [str(LOOPKIT), "hook", "claude", "pretooluse"],
        input=text,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        env=env or clean_env(),
    )


def decision(done: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    return out["permissionDecision"], out["permissionDecisionReason"]


def requests_of(ws: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((ws / "requests").glob("*.json"))]


def test_calls_no_rule_names_go_ahead_silently(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    for payload in (
        event(ws, "Bash", {"command": "pytest -q", "description": "run the tests"}),
        event(ws, "Write", {"file_path": str(ws / "src" / "app.py"), "content": "x = 1\n"}),
        event(ws, "Edit", {"file_path": str(ws / "app.py"), "old_string": "a", "new_string": "b"}),
        event(
            ws,
            "MultiEdit",
            {"file_path": str(ws / "app.py"), "edits": [{"old_string": "a", "new_string": "b"}]},
        ),
        event(ws, "mcp__github__create_issue", {"title": "a bug"}),
    ):
        done = hook(ws, payload)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), payload
    assert not (ws / "requests").exists() and not (ws / "BLOCKED.md").exists()


def test_unreadable_input_is_denied_in_one_line(ws: Path) -> None:
    for garbage in ("", "not json", "[1, 2]", '{"tool_input": {}}'):
        done = hook(ws, garbage)
        assert done.returncode == 2 and done.stdout == ""
        [line] = done.stderr.splitlines()
        assert "the call is denied" in line and "Traceback" not in done.stderr


def test_outside_a_supervisor_it_waits_for_the_approval_of_that_call(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "30s"\n')
    push = event(ws, "Bash", {"command": "git push --force origin main"})
    waiting = subprocess.Popen(
        [str(LOOPKIT), "hook", "claude", "pretooluse"],
        cwd=ws,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    assert waiting.stdin is not None
    waiting.stdin.write(json.dumps(push))
    waiting.stdin.close()
    wait_until(lambda: (ws / "requests").exists() and requests_of(ws), 20, "the approval request")
    (request,) = requests_of(ws)
    assert request["kind"] == "approval" and "git push --force origin main" in str(
        request["prompt"]
    )
    wait_until(lambda: (ws / "BLOCKED.md").exists(), 20, "the block")
    answered = loopkit(
        "-C",
        str(ws),
        "reply",
        "--request-id",
        str(request["request_id"]),
        "--reply",
        "approve",
        "--by",
        "ana",
    )
    assert answered.returncode == 0
    assert waiting.stdout is not None and waiting.stderr is not None
    with waiting.stdout, waiting.stderr:
        out = waiting.stdout.read()
        waiting.stderr.read()
    assert waiting.wait(30) == 0
    verdict = json.loads(out)["hookSpecificOutput"]
    assert verdict["permissionDecision"] == "allow"
    assert verdict["permissionDecisionReason"] == "approved by ana via cli"
    # Used once: the same call again is a new question; another call never rides on it.
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "1s"\n')
    assert decision(hook(ws, push))[0] == "deny"
    other = event(ws, "Bash", {"command": "git push --force origin release"})
    assert decision(hook(ws, other))[0] == "deny"
    assert len(requests_of(ws)) == 3


def test_a_rejection_is_denied_with_the_humans_reason(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "1s"\n')
    wipe = event(ws, "Write", {"file_path": str(ws / ".env"), "content": "KEY=x"})
    assert decision(hook(ws, wipe))[0] == "deny"
    (request,) = requests_of(ws)
    loopkit(
        "-C",
        str(ws),
        "reply",
        "--request-id",
        str(request["request_id"]),
        "--reply",
        "no, keep the old keys",
    )
    verdict, reason = decision(hook(ws, wipe))
    assert verdict == "deny" and "keep the old keys" in reason


def test_a_broken_gate_denies_every_call(ws: Path) -> None:
    """A rule that is no regular expression leaves no rule to trust: every call is denied
    with the error (SPEC section 28), the unmatched ones too."""
    write_config(ws, '[gate]\nrules = ["(unclosed"]\n')
    for command in ("rm -rf build", "ls"):
        done = hook(ws, event(ws, "Bash", {"command": command}))
        assert done.returncode == 2 and "[gate]" in done.stderr
    write_config(ws, '[escalation]\nchannel = "none"\n')
    (ws / "requests").write_text("a file where the folder goes")
    broken = hook(ws, event(ws, "Bash", {"command": "rm -rf build"}))
    assert broken.returncode == 2 and broken.stdout == ""
    [line] = broken.stderr.splitlines()
    assert "the call is denied" in line


AGENT = f"""\
import json, os, subprocess, sys
call = {{"session_id": "s", "cwd": os.getcwd(), "hook_event_name": "PreToolUse",
        "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "t",
        "tool_input": {{"command": "git push --force origin main"}}}}
done = subprocess.run([{str(LOOPKIT)!r}, "hook", "claude", "pretooluse"],
                      input=json.dumps(call), capture_output=True, text=True)
with open("hook-answers.txt", "a") as log:
    log.write(done.stdout.strip() + "\\n")
"""


def test_under_run_the_call_waits_for_a_tap_then_goes_ahead_once(ws: Path) -> None:
    (ws / "agent.py").write_text(AGENT)
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n'
        '[escalation]\nchannel = "none"\n',
    )
    first = loopkit("-C", str(ws), "run", "--exit-on-block", "--max-iterations", "3")
    assert first.returncode == 2, first.stderr  # the agent's turn ended; the loop is blocked
    answers = (ws / "hook-answers.txt").read_text().splitlines()
    assert len(answers) == 1
    verdict = json.loads(answers[0])["hookSpecificOutput"]
    assert verdict["permissionDecision"] == "deny"
    assert verdict["permissionDecisionReason"].startswith("waiting for a human's approval")
    (request,) = requests_of(ws)
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    again = loopkit("-C", str(ws), "run", "--exit-on-block", "--max-iterations", "2")
    answers = (ws / "hook-answers.txt").read_text().splitlines()
    assert json.loads(answers[1])["hookSpecificOutput"]["permissionDecision"] == "allow"
    # Once: the iteration after asks again, and the loop blocks on that new question.
    assert again.returncode == 2
    assert json.loads(answers[2])["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert len(requests_of(ws)) == 2 and request["request_id"] in str(requests_of(ws))


def notification(ws: Path, env: dict[str, str], kind: str, session: str = "s1") -> str:
    payload = {
        "session_id": session,
        "cwd": str(ws),
        "hook_event_name": "Notification",
        "message": "Claude needs your permission to use Bash",
        "notification_type": kind,
    }
    done = subprocess.run(
        [str(LOOPKIT), "hook", "claude", "notification"],
        cwd=ws,
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and done.stdout == ""
    return done.stderr


def test_notifications_reach_the_phone_once_per_session_per_ten_minutes(
    ws: Path, server: FakeServer
) -> None:
    env = phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    assert "sent via telegram" in notification(ws, env, "permission_prompt")
    (sent,) = server.calls("/sendMessage")
    text = sent.body["text"]
    assert text.startswith("[loopkit] Claude Code in ") and "\n" not in text
    assert "ignored" in notification(ws, env, "idle_prompt")  # the same session, too soon
    assert "sent" in notification(ws, env, "idle_prompt", session="s2")
    assert "ignored" in notification(ws, env, "auth_success", session="s3")
    assert len(server.calls("/sendMessage")) == 2


def test_install_merges_keeps_other_hooks_and_is_idempotent(ws: Path) -> None:
    settings = ws / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}
    settings.write_text(json.dumps({"model": "x", "hooks": {"PreToolUse": [mine]}}))
    first = loopkit("-C", str(ws), "hook", "install", "claude")
    assert first.returncode == 0 and "added PreToolUse" in first.stdout
    data = json.loads(settings.read_text())
    assert data["model"] == "x" and data["hooks"]["PreToolUse"][0] == mine
    commands = [h["command"] for g in data["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert commands == ["./audit.sh", f"{LOOPKIT} hook claude pretooluse"]
    assert (
        data["hooks"]["Notification"][0]["hooks"][0]["command"]
        == f"{LOOPKIT} hook claude notification"
    )
    second = loopkit("-C", str(ws), "hook", "install", "claude")
    assert "nothing changed" in second.stdout and json.loads(settings.read_text()) == data


def _force_push(ws: Path) -> dict[str, object]:
    return event(ws, "Bash", {"command": "git push --force origin main"})


def test_the_installed_hook_holds_a_call_whatever_claude_codes_path(ws: Path) -> None:
    """The attack: `hook install` wrote a bare `loopkit`; Claude Code started where PATH lacks
    the venv got exit 127 from the hook — a non-blocking error — and ran the force-push."""
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "0s"\n')
    assert loopkit("-C", str(ws), "hook", "install", "claude").returncode == 0
    settings = ws / ".claude" / "settings.json"
    env = clean_env(PATH="/usr/bin:/bin")  # no venv on it
    verdict, reason = claudecode.pretooluse(settings, _force_push(ws), cwd=ws, env=env)
    assert verdict == "deny", reason
    quiet = event(ws, "Bash", {"command": "pytest -q"})
    assert claudecode.pretooluse(settings, quiet, cwd=ws, env=env) == ("proceed", "")


def test_install_rewrites_loopkits_earlier_entries_to_the_absolute_path(ws: Path) -> None:
    settings = ws / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./audit.sh"}]}
    old = {"type": "command", "command": "loopkit -C /srv/ws hook claude pretooluse", "timeout": 99}
    gone = "/gone/venv/bin/loopkit hook claude notification"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [mine, {"matcher": "Bash", "hooks": [old]}],
                    "Notification": [{"hooks": [{"type": "command", "command": gone}]}],
                }
            }
        )
    )
    done = loopkit("-C", str(ws), "hook", "install", "claude")
    assert done.returncode == 0 and done.stdout.count("updated") == 2, done.stdout
    data = json.loads(settings.read_text())
    pre = [h for g in data["hooks"]["PreToolUse"] for h in g["hooks"]]
    assert pre == [
        mine["hooks"][0],
        {
            "type": "command",
            "command": f"{LOOPKIT} -C /srv/ws hook claude pretooluse",
            "timeout": 99,
        },
    ]
    [note] = [h for g in data["hooks"]["Notification"] for h in g["hooks"]]
    assert note["command"] == f"{LOOPKIT} hook claude notification"
    again = loopkit("-C", str(ws), "hook", "install", "claude")
    assert "nothing changed" in again.stdout and json.loads(settings.read_text()) == data


def test_install_names_the_program_that_starts_this_loopkit(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    start = [sys.executable, "-m", "loopkit"]
    assert install(path, start) == [
        f"added PreToolUse: {shlex.join(start)} hook claude pretooluse",
        f"added Notification: {shlex.join(start)} hook claude notification",
        f"added PermissionRequest: {shlex.join(start)} hook claude permission-request",
        f"added StopFailure: {shlex.join(start)} hook claude stop-failure",
    ]
    assert ours(f"{shlex.join(start)} hook claude pretooluse") == ("PreToolUse", start)
    assert ours("'/opt/my tools/loopkit' hook claude notification") == (
        "Notification",
        ["/opt/my tools/loopkit"],
    )
    assert ours("./audit.sh hook claude pretooluse") is None
    assert os.path.isabs(program()[0])
