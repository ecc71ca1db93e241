"""An approval is bound to what the call runs, and the human sees the call as it runs
(SPEC section 23): the agent's free-text description is not part of the call, and a shell
line is shown as written — ``>`` stays ``>``, never ``'>'``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.hooks.approve import call_hash, shown_call

from helpers import LOOPKIT, clean_env, loopkit, write_config

WORDS = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=0, max_size=40
)


@settings(max_examples=200, deadline=None)
@given(command=WORDS, one=WORDS, other=WORDS, background=st.booleans(), timeout=st.integers())
def test_a_calls_description_never_changes_its_binding(
    command: str, one: str, other: str, background: bool, timeout: int
) -> None:
    first = {"command": command, "description": one}
    again = {"command": command, "description": other, "run_in_background": background,
             "timeout": timeout}  # fmt: skip
    assert call_hash("Bash", first, "/w") == call_hash("Bash", again, "/w")
    gemini = {"command": command, "description": one, "dir_path": "src"}
    assert call_hash("run_shell_command", gemini, "/w") == call_hash(
        "run_shell_command", {**gemini, "description": other}, "/w"
    )


@settings(max_examples=200, deadline=None)
@given(command=WORDS, changed=WORDS, content=WORDS)
def test_what_runs_always_changes_the_binding(command: str, changed: str, content: str) -> None:
    if command != changed:
        assert call_hash("Bash", {"command": command}, "/w") != call_hash(
            "Bash", {"command": changed}, "/w"
        )
        write = {"file_path": ".env", "content": command}
        assert call_hash("Write", write, "/w") != call_hash(
            "Write", {**write, "content": changed}, "/w"
        )
    assert call_hash("Bash", {"command": command}, "/w") != call_hash(
        "Bash", {"command": command}, "/elsewhere"
    )
    # A tool loopkit does not know is bound to all of it: its "description" may be its payload.
    issue = {"title": "t", "description": command}
    if command != changed:
        assert call_hash("mcp__gh__create_issue", issue, "/w") != call_hash(
            "mcp__gh__create_issue", {**issue, "description": changed}, "/w"
        )


SHELL = st.lists(
    st.sampled_from(
        ["echo", "hi", ">", ">>", "out.txt", "|", "sort", "2>&1", "&&", "rm", "-rf", "build",
         "'a b'", '"$HOME"', "$(date)", "<", "in.txt", ";", "x=1", "--flag=v", "*.py"]
    ),
    min_size=1,
    max_size=12,
).map(" ".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(command=SHELL)
def test_a_shell_line_is_shown_exactly_as_it_runs(command: str) -> None:
    assert shown_call("Bash", {"command": command, "description": "x"}) == [command]
    assert shown_call("run_shell_command", {"command": command}) == [command]


def test_a_secret_in_a_shell_line_is_masked_in_place() -> None:
    line = "curl -H 'Authorization: Bearer sk-live-abcdef123456' https://x/y > out.json"
    (shown,) = shown_call("Bash", {"command": line})
    assert shown == "curl -H 'Authorization: ***' https://x/y > out.json"


def _hook(ws: Path, agent: str, event: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LOOPKIT), "hook", agent, "pretooluse" if agent != "gemini" else "beforetool"],
        input=json.dumps(event),
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(),
    )


def _requests(ws: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((ws / "requests").glob("*.json"))]


def test_an_approved_call_retried_with_other_words_is_the_same_approval(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "0s"\n')

    def call(description: str) -> dict[str, object]:
        return {"session_id": "s1", "cwd": str(ws), "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_use_id": "t",
                "tool_input": {"command": "rm -rf build", "description": description}}  # fmt: skip

    first = _hook(ws, "claude", call("Clean the build folder"))
    assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    (request,) = _requests(ws)
    assert loopkit("-C", str(ws), "reply", "--request-id", str(request["request_id"]),
                   "--reply", "approve").returncode == 0  # fmt: skip
    retried = _hook(ws, "claude", call("Remove the stale build output before rebuilding"))
    out = json.loads(retried.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow", out
    assert len(_requests(ws)) == 1  # no second question
    # Once: a third try (any words) asks again.
    third = _hook(ws, "claude", call("Clean the build folder"))
    assert json.loads(third.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert len(_requests(ws)) == 2


def test_codex_shows_a_redirect_as_a_redirect(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[hooks]\nwait = "0s"\n')
    line = "rm -rf build > cleanup.log 2>&1"
    done = _hook(ws, "codex", {"session_id": "s", "turn_id": "t", "cwd": str(ws),
                                "hook_event_name": "PreToolUse", "tool_name": "Bash",
                                "tool_input": {"command": line}, "tool_use_id": "c"})  # fmt: skip
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    (request,) = _requests(ws)
    assert f"`{line}`" in str(request["prompt"])
    assert f"Command: {line}\n" in str(request["situation"])
    assert "'>'" not in json.dumps(request)
    blocked = (ws / "BLOCKED.md").read_text()
    assert line in blocked and "'>'" not in blocked
