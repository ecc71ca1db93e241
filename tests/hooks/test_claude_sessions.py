"""``claude -p`` under ``loopkit run``, end to end (SPEC section 18): the fake ``claude``
(:mod:`fakeclaude`, which follows Claude Code's hooks reference and headless docs) runs the
installed loopkit hooks, and the supervisor resumes the same session after an answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from loopkit.hooks.install import install

from helpers import LOOPKIT, clean_env, loopkit, write_config

FAKE = Path(__file__).with_name("fakeclaude.py")
GATED = "rm -rf junk; echo gated >> ran.txt"
SAFE = "echo safe >> ran.txt"


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command, "description": "a step"}}


class Claude:
    """A workspace whose agent is the fake ``claude -p`` (its script: sessions, each a list
    of episodes — one per invocation — each a list of turns, each a list of tool calls or a
    ``{"fail": …}``), with loopkit's hooks installed."""

    def __init__(
        self,
        ws: Path,
        sessions: list[list[Any]],
        *,
        mode: str = "bypassPermissions",
        extra: str = "",
    ) -> None:
        self.ws = ws
        self.home = ws.parent / "claude-home"
        script = ws.parent / "claude-script.json"
        script.write_text(json.dumps({"sessions": sessions}))
        self.env = clean_env(FAKE_CLAUDE_HOME=str(self.home), FAKE_CLAUDE_SCRIPT=str(script))
        head = [sys.executable, str(FAKE), "-p"]
        tail = ["--output-format", "json", "--permission-mode", mode]
        agent = [*head, "do the next task", *tail]
        resume = [*head, "--resume", "{session_id}", *tail]
        write_config(
            ws,
            f"[loop]\nagent = {json.dumps(agent)}\nresume = {json.dumps(resume)}\n"
            f'pause = "0s"\n{extra}[escalation]\nchannel = "none"\n',
        )
        # `loopkit hook install claude`, in process (its command line is tested elsewhere).
        assert install(ws / ".claude" / "settings.json", [str(LOOPKIT)])

    def lk(self, *args: str) -> Any:
        return loopkit("-C", str(self.ws), *args, env=self.env)

    def run(self, iterations: int = 2) -> Any:
        """``loopkit run --exit-on-block``: blocked (2), or done after ``iterations`` (0)."""
        return self.lk("run", "--exit-on-block", "--max-iterations", str(iterations))

    def calls(self) -> list[dict[str, Any]]:
        path = self.home / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def session(self, session_id: str) -> dict[str, Any]:
        data = json.loads((self.home / "sessions" / f"{session_id}.json").read_text())
        assert isinstance(data, dict)
        return data

    def ran(self) -> list[str]:
        path = self.ws / "ran.txt"
        return path.read_text().splitlines() if path.exists() else []

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.ws / "requests").glob("*.json"))]

    def agent(self) -> dict[str, Any]:
        """``status --json``'s ``agent``, read from state.json (no process to start)."""
        state = json.loads((self.ws / ".loopkit" / "state.json").read_text())
        return {
            "session_id": state["agent_session"],
            "result": state["agent_result"],
            "resume": state["resume"],
            "dependency_down": state["dependency_down"],
            "failures": state["failures"],
        }

    def status(self) -> dict[str, Any]:
        done = self.lk("status", "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert isinstance(data, dict)
        return data


def test_a_gated_call_waits_then_the_same_session_runs_it_exactly_once(ws: Path) -> None:
    """A multi-call turn under bypassPermissions: defer would be ignored there and the call
    would run, so the gate denies; after the approval the session resumes and runs it once."""
    (ws / "junk").mkdir()
    claude = Claude(ws, [[[[bash(SAFE), bash(GATED)]], [[bash(GATED)]]]])
    first = claude.run()
    assert first.returncode == 2, first.stderr
    assert claude.ran() == ["safe"] and (ws / "junk").exists()  # never before the approval
    (request,) = claude.requests()
    session_id = claude.agent()["session_id"]
    assert request["gate"]["session"] == session_id  # recorded on the request
    denied = [e for e in claude.session(session_id)["transcript"] if e.get("outcome") == "denied"]
    assert denied[0]["reason"].startswith("waiting for a human's approval")

    answered = claude.lk(
        "reply", "--request-id", request["request_id"], "--reply", "approve", "--by", "ana"
    )
    assert answered.returncode == 0, answered.stderr
    second = claude.run(iterations=1)
    assert second.returncode == 0, second.stderr
    resumed = claude.calls()[-1]
    assert resumed["resume"] == session_id and len(claude.calls()) == 2  # the same session
    assert "approved by ana" in resumed["stdin"] and "run `rm -rf junk" in resumed["stdin"]
    assert claude.ran() == ["safe", "gated"] and not (ws / "junk").exists()  # exactly once
    transcript = claude.session(session_id)["transcript"]
    assert [e["outcome"] for e in transcript if e.get("tool")] == ["ran", "denied", "ran"]
    status = claude.status()["agent"]
    assert status["resume"]["resumed"] is True and status["session_id"] == session_id
    assert status["result"]["total_cost_usd"] > 0 and status["result"]["is_error"] is False
    assert "session" in claude.lk("status").stdout


def test_a_rejections_words_reach_the_resumed_session(ws: Path) -> None:
    (ws / "junk").mkdir()
    claude = Claude(ws, [[[[bash(GATED)]], [[bash(GATED)]]]])
    assert claude.run().returncode == 2
    (request,) = claude.requests()
    rejected = claude.lk(
        "reply",
        "--request-id",
        request["request_id"],
        "--reply",
        "reject: keep junk, it holds the fixtures",
        "--by",
        "ana",
    )
    assert rejected.returncode == 0, rejected.stderr
    assert claude.run(iterations=1).returncode == 0
    resumed = claude.calls()[-1]
    assert "rejected by ana" in resumed["stdin"] and "keep junk" in resumed["stdin"]
    transcript = claude.session(resumed["resume"])["transcript"]
    last = [e for e in transcript if e.get("tool")][-1]
    assert last["outcome"] == "denied" and "keep junk" in last["reason"]  # the hook's words
    assert claude.ran() == [] and (ws / "junk").exists()


def test_a_session_that_does_not_resume_falls_back_to_a_fresh_run_and_says_so(ws: Path) -> None:
    (ws / "junk").mkdir()
    claude = Claude(ws, [[[[bash(GATED)]]], [[[bash("echo fresh >> ran.txt")]]]])
    assert claude.run().returncode == 2
    (request,) = claude.requests()
    session_id = claude.agent()["session_id"]
    (claude.home / "sessions" / f"{session_id}.json").unlink()  # the session is gone
    claude.lk("reply", "--request-id", request["request_id"], "--reply", "approve", "--by", "ana")
    done = claude.run(iterations=1)
    assert done.returncode == 0, done.stderr
    resumed, fresh = claude.calls()[-2:]
    assert resumed["resume"] == session_id and fresh["resume"] is None
    assert fresh["LOOPKIT_DECISION"] == "approved"
    assert f"session {session_id} did not resume" in done.stdout + done.stderr
    status = claude.agent()
    assert status["resume"]["resumed"] is False and "no result" in status["resume"]["reason"]
    assert "did not resume" in claude.lk("status").stdout
    assert claude.ran() == ["fresh"]


QUESTION = {
    "tool": "AskUserQuestion",
    "input": {
        "questions": [
            {
                "question": "Which database should the tests use?",
                "header": "Database",
                "options": [
                    {"label": "SQLite", "description": "in memory, fast"},
                    {"label": "Postgres", "description": "as in production"},
                    {"label": "MySQL", "description": "the legacy one"},
                    {"label": "DuckDB", "description": "columnar"},
                ],
                "multiSelect": False,
            },
            {
                "question": "Keep the old fixtures?",
                "header": "Fixtures",
                "options": [{"label": "Yes"}, {"label": "No"}],
                "multiSelect": False,
            },
        ]
    },
}


def test_claudes_own_questions_are_asked_and_answered_through_resume(ws: Path) -> None:
    claude = Claude(ws, [[[[QUESTION], [bash("echo after >> ran.txt")]]]])
    first = claude.run()
    assert first.returncode == 2, first.stderr
    assert claude.agent()["result"]["stop_reason"] == "tool_deferred"
    one, two = sorted(claude.requests(), key=lambda r: r["gate"]["question"])  # one a question
    assert one["prompt"] == "Which database should the tests use?" and two["block"] == "joined"
    assert [o["label"] for o in one["options"]] == ["SQLite", "Postgres", "MySQL"]  # the phone
    blocked = (ws / "BLOCKED.md").read_text()
    assert "DuckDB" in blocked  # a fourth, in BLOCKED.md and the inbox
    assert (
        claude.lk(
            "reply", "--request-id", one["request_id"], "--reply", "DuckDB", "--by", "ana"
        ).returncode
        == 0
    )
    assert claude.run().returncode == 2  # the second question is asked in turn
    assert (
        claude.lk(
            "reply", "--request-id", two["request_id"], "--reply", "B", "--by", "ana"
        ).returncode
        == 0
    )
    done = claude.run(iterations=1)
    assert done.returncode == 0, done.stderr
    resumed = claude.calls()[-1]
    assert resumed["resume"] and resumed["stdin"] == ""  # no prompt: the hook answers
    transcript = claude.session(resumed["resume"])["transcript"]
    asked = [e for e in transcript if e.get("tool") == "AskUserQuestion"]
    assert asked[-1]["outcome"] == "ran"
    assert asked[-1]["answers"] == {
        "Which database should the tests use?": "DuckDB",
        "Keep the old fixtures?": "No",
    }
    assert asked[-1]["input"]["questions"] == QUESTION["input"]["questions"]
    assert claude.ran() == ["after"]


def test_a_rate_limit_waits_as_a_dependency_down_and_is_no_verify_failure(ws: Path) -> None:
    claude = Claude(
        ws,
        [
            [[{"fail": "rate_limit", "details": "429 Too Many Requests"}]],
            [[{"fail": "rate_limit"}]],
            [[{"fail": "rate_limit"}]],
            [[{"fail": "rate_limit"}]],
        ],
        extra='verify = "false"\nmax_verify_failures = 1\npreflight_backoff = "10ms"\n',
    )
    done = claude.run(iterations=3)
    assert done.returncode == 0, done.stdout + done.stderr  # ran out of iterations, no block
    assert "rate_limit" in done.stdout + done.stderr and not (ws / "BLOCKED.md").exists()
    state = claude.agent()
    assert state["failures"] == 0 and state["dependency_down"]["tries"] == 3
    assert "api down:" in claude.lk("status").stdout
    # Down for longer than dependency_wait: asked.
    write_config(
        ws,
        (ws / "loopkit.toml")
        .read_text()
        .replace('pause = "0s"\n', 'pause = "0s"\ndependency_wait = "0s"\n'),
    )
    blocked = claude.run()
    assert blocked.returncode == 2, blocked.stdout + blocked.stderr
    (request,) = claude.requests()
    assert request["trigger"] == "dependency-down" and "API" in request["prompt"]


def test_an_authentication_failure_is_asked_at_once(ws: Path) -> None:
    claude = Claude(ws, [[[{"fail": "authentication_failed"}]]])
    done = claude.run(iterations=3)
    assert done.returncode == 2, done.stdout + done.stderr
    (request,) = claude.requests()
    assert request["trigger"] == "missing-credential"
    assert "authentication_failed" in request["prompt"] and len(claude.calls()) == 1


def test_a_permission_prompt_answered_always_allow_from_the_inbox(ws: Path) -> None:
    """Claude's own dialog (no bypass): the PermissionRequest hook asks; "Always allow"
    carries the suggested rule, which Claude Code writes; the next same call runs unasked."""
    import subprocess

    import fakeclaude

    from helpers import wait_until

    claude = Claude(ws, [[[[bash("echo allowed >> ran.txt")]]]], mode="default")
    event = {
        "session_id": "s-1",
        "cwd": str(ws),
        "hook_event_name": "PermissionRequest",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "npm test"},
        "permission_suggestions": [
            {
                "type": "addRules",
                "rules": [{"toolName": "Bash", "ruleContent": "npm test"}],
                "behavior": "allow",
                "destination": "localSettings",
            }
        ],
    }
    write_config(ws, (ws / "loopkit.toml").read_text() + '[hooks]\nwait = "30s"\n')
    waiting = subprocess.Popen(
        [str(LOOPKIT), "hook", "claude", "permission-request"],
        cwd=ws,
        env=claude.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert waiting.stdin is not None
    waiting.stdin.write(json.dumps(event))
    waiting.stdin.close()
    wait_until(lambda: (ws / "requests").exists() and claude.requests(), 20, "the request")
    (request,) = claude.requests()
    assert [o["label"] for o in request["options"]] == ["Allow", "Deny", "Always allow"]
    assert "Bash(npm test)" in request["situation"]
    # Answered from the web inbox (in process), as a human taps there.
    from loopkit.fleet import Hubs
    from loopkit.home import Registry, home, workspace_id
    from loopkit.inbox.auth import InboxToken, Throttle
    from loopkit.inbox.web import Inbox, app
    from loopkit.requests.locate import Stores

    from helpers import Browser

    Registry().register(ws, "shop")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    inbox = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)))
    inbox.get(f"/?token={token.value()}", follow_redirects=False)
    page = inbox.get("/").text
    assert "Claude asks permission" in page and "Always allow" in page
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    url = f"/r/{workspace_id(ws)}/{request['request_id']}/answer"
    first = inbox.post(url, data={"csrf": csrf, "reply": "C"})
    assert first.status_code == 200 and 'name="confirm" value="1"' in first.text  # two taps
    assert waiting.poll() is None and claude.requests()[0]["status"] == "open"
    confirm = first.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    tapped = inbox.post(
        url, data={"csrf": confirm, "reply": "C", "confirm": "1"}, follow_redirects=False
    )
    assert tapped.status_code == 303, tapped.text
    assert waiting.stdout is not None and waiting.stderr is not None
    with waiting.stdout, waiting.stderr:
        out, err = waiting.stdout.read(), waiting.stderr.read()
    assert waiting.wait(30) == 0, err
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision == {
        "behavior": "allow",
        "updatedPermissions": [event["permission_suggestions"][0]],
    }
    # As Claude Code applies it: the rule is written; the same call needs no dialog again.
    fakeclaude._apply(ws, decision["updatedPermissions"])
    assert fakeclaude._allowed_by_rule(ws, "Bash", {"command": "npm test"})


def test_a_permission_prompt_nobody_answers_is_no_decision(ws: Path) -> None:
    claude = Claude(ws, [[[[bash("echo allowed >> ran.txt")]]]], mode="default")
    write_config(ws, (ws / "loopkit.toml").read_text() + '[hooks]\nwait = "0s"\n')
    done = claude.run()
    # In -p mode nobody can answer Claude's own dialog: the call is denied, not run.
    assert claude.ran() == []
    assert claude.agent()["result"]["permission_denials"][0]["tool_name"] == "Bash"
    assert done.returncode == 2  # the question stands for the human as the loop's block


def test_the_fake_punishes_a_defer_in_a_turn_of_several_calls(ws: Path) -> None:
    """Why the gate denies instead of deferring: with several calls in a turn Claude Code
    ignores ``defer`` and the call takes the normal flow, which under bypassPermissions runs
    it. The fake does the same; alone in its turn, a deferred call stays pending."""
    hook = ws / "defer.sh"
    hook.write_text(
        '#!/bin/sh\ncat >/dev/null\necho \'{"hookSpecificOutput": {"hookEventName": '
        '"PreToolUse", "permissionDecision": "defer"}}\'\n'
    )
    hook.chmod(0o755)
    claude = Claude(ws, [[[[bash(SAFE), bash("echo deferred >> ran.txt")]]], [[[bash(SAFE)]]]])
    settings = ws / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["PreToolUse"].insert(
        0, {"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}
    )
    settings.write_text(json.dumps(data))
    import subprocess

    run = [
        sys.executable,
        str(FAKE),
        "-p",
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        "bypassPermissions",
    ]
    several = subprocess.run(run, cwd=ws, env=claude.env, capture_output=True, text=True)
    assert json.loads(several.stdout)["stop_reason"] == "end_turn"
    assert "defer ignored" in several.stderr and claude.ran() == ["safe", "deferred"]
    alone = json.loads(
        subprocess.run(run, cwd=ws, env=claude.env, capture_output=True, text=True).stdout
    )
    assert alone["stop_reason"] == "tool_deferred" and alone["deferred_tool_use"]["name"] == "Bash"
    assert claude.ran() == ["safe", "deferred"]  # the lone call waits for --resume


def test_under_loopkit_run_a_permission_prompt_answered_in_the_turn_lets_the_call_run(
    ws: Path,
) -> None:
    """The hook waits (up to ``[hooks] wait``) while the supervisor sends the question; the
    answer, used by the hook, is not handed to the next agent run as well."""
    import subprocess

    from helpers import wait_until

    claude = Claude(ws, [[[[bash("echo allowed >> ran.txt")]]]], mode="default")
    write_config(ws, (ws / "loopkit.toml").read_text() + '[hooks]\nwait = "60s"\n')
    run = subprocess.Popen(
        [str(LOOPKIT), "-C", str(ws), "run", "--max-iterations", "2"],
        env=claude.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: (ws / "requests").exists() and claude.requests(), 30, "the dialog")
        (request,) = claude.requests()
        assert request["raised_by"] == "agent" and request["trigger"] == "claude-permission"
        answered = claude.lk(
            "reply", "--request-id", request["request_id"], "--reply", "approve", "--by", "ana"
        )
        assert answered.returncode == 0, answered.stderr
        out, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
    assert run.returncode == 0, out
    assert claude.ran() == ["allowed"]
    assert [c["LOOPKIT_DECISION"] for c in claude.calls()] == [None, None]  # used by the hook
    assert all(c["resume"] is None for c in claude.calls())
