"""Claude Code 2.1.197, as installed from the npm registry, in the kit ``loopkit init
--agent claude`` writes, against a fake Anthropic Messages API (:mod:`anthropic_api`).

Whole turns: the gated call never runs before the human's answer and runs once after, in
the same session; Claude's own question and its permission dialog reach the human and the
answer returns to the same session; a 429 is waited out; a 401 is asked at once. Reproduce
with ``.venv/bin/python -m pytest -q -n0 tests/agents/test_claude_code.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentloop import TASKS, TICKED, Loop, agent_env, claude_workspace
from anthropic_api import AnthropicApi
from wire import Call, Fail, Say

GATED = "rm -rf build"
DIALOG = "sh -c 'echo postgres > db.txt'"  # acceptEdits asks before it (a plain echo it allows)


def bash(command: str, description: str = "a step") -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": command, "description": description})


@pytest.fixture
def claude_loop(tmp_path: Path, claude_cli: Path, refusing_port: int) -> Any:
    """``loopkit init --agent claude`` in a git workspace with a task and a build folder; the
    fake API's address and key in the environment (``ANTHROPIC_BASE_URL``)."""
    made: list[Loop] = []

    def make(api: AnthropicApi, **extra: str) -> Loop:
        ws = tmp_path / f"shop{len(made) or ''}"
        made.append(claude_workspace(ws, tmp_path / "home", claude_cli, refusing_port, api,
                                     **extra))  # fmt: skip
        return made[-1]

    return make


def ran(api: AnthropicApi, command: str) -> list[dict[str, Any]]:
    """The tool results Claude sent back for its calls of ``command``, in order."""
    ids = [
        block["id"]
        for seen in api.turns()
        for message in seen.body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_use" and block.get("input", {}).get("command") == command
    ]
    results = {r["tool_use_id"]: r for r in api.tool_results()}
    return [results[i] for i in dict.fromkeys(ids) if i in results]


def text_of(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content)


def session_of(seen: Any) -> str:
    return json.loads(seen.body["metadata"]["user_id"])["session_id"]


def test_a_gated_call_waits_for_the_answer_then_runs_once_in_the_same_session(
    claude_loop: Any,
) -> None:
    script = [
        Call(*bash(GATED, "Clean the build folder")),
        Say("The cleanup waits for a human's approval."),
        # Resumed with the approval: the same call, reworded, then the task ticked and
        # committed — a headless turn that writes and commits.
        Call(*bash(GATED, "Remove stale build output")),
        Call("Read", {"file_path": "TASKS.md"}),
        Call("Write", {"file_path": "TASKS.md", "content": TICKED}),
        Call(*bash("git add -A && git commit -qm 'clean the build'")),
        Say("Done: the build is clean and the task is ticked."),
    ]
    with AnthropicApi(script) as api:
        loop = claude_loop(api)
        first = loop.run()
        assert first.returncode == 2, first.stdout + first.stderr
        assert (loop.ws / "build" / "out.o").exists()  # never before the answer
        (request,) = loop.open_requests()
        assert request["kind"] == "approval" and f"`{GATED}`" in request["prompt"]
        waited = ran(api, GATED)
        assert len(waited) == 1 and waited[0].get("is_error")
        assert "waiting for a human's approval" in text_of(waited[0])

        loop.reply(request["request_id"], "approve")
        second = loop.run()
        assert second.returncode == 0, second.stdout + second.stderr
        assert not (loop.ws / "build").exists()
        results = ran(api, GATED)
        assert len(results) == 2 and not results[1].get("is_error")  # once, after the answer
        assert len(loop.requests()) == 1  # the reworded retry was the same approval
        turns = api.turns()
        assert {session_of(t) for t in turns} == {session_of(turns[0])}  # one session
        resumed = turns[2].body["messages"]
        said = json.dumps(resumed)
        assert "approved by ana" in said and waited[0]["tool_use_id"] in said
        assert "clean the build" in loop.git("log", "--format=%s", "-1")
        assert (loop.ws / "TASKS.md").read_text() == TICKED
        assert not api.rejected and not api.unforeseen


def test_claudes_question_and_its_permission_dialog_reach_the_human_and_return_to_its_session(
    claude_loop: Any,
) -> None:
    options = [{"label": "SQLite", "description": "a file"},
               {"label": "Postgres", "description": "a server"}]  # fmt: skip
    ask = {"questions": [{"question": "Which database should the tests use?", "header": "DB",
                          "multiSelect": False, "options": options}]}  # fmt: skip
    script = [
        Call("AskUserQuestion", ask),
        # Resumed with the answer; then a call its permission mode does not allow.
        Call(*bash(DIALOG)),
        Call(*bash(DIALOG, "again, as allowed")),
        Call("Read", {"file_path": "TASKS.md"}),
        Call("Write", {"file_path": "TASKS.md", "content": TICKED}),
        Say("Done."),
    ]
    with AnthropicApi(script) as api:
        loop = claude_loop(api)
        # A mode that asks before a shell command: Claude's own permission dialog.
        text = (loop.ws / "loopkit.toml").read_text()
        (loop.ws / "loopkit.toml").write_text(text.replace("bypassPermissions", "acceptEdits"))
        first = loop.run()
        assert first.returncode == 2, first.stdout + first.stderr
        (question,) = loop.open_requests()
        assert question["prompt"] == "Which database should the tests use?"
        assert [o["label"] for o in question["options"]] == ["SQLite", "Postgres"]
        loop.reply(question["request_id"], "B")

        second = loop.run()
        assert second.returncode == 2, second.stdout + second.stderr
        assert "Postgres" in json.dumps(api.turns()[1].body["messages"][-1])
        assert not (loop.ws / "db.txt").exists()  # the dialog holds the call
        (dialog,) = loop.open_requests()
        assert dialog["kind"] == "approval" and f"`{DIALOG}`" in dialog["prompt"]
        loop.reply(dialog["request_id"], "approve")

        third = loop.run()
        assert third.returncode == 0, third.stdout + third.stderr
        assert (loop.ws / "db.txt").read_text() == "postgres\n"
        turns = api.turns()
        assert {session_of(t) for t in turns} == {session_of(turns[0])}
        assert not api.rejected and not api.unforeseen


def test_a_rate_limit_is_waited_out_and_a_refused_key_is_asked_at_once(claude_loop: Any) -> None:
    script = [
        Fail(429, retry_after="0"),
        Call("Read", {"file_path": "TASKS.md"}),
        Call("Write", {"file_path": "TASKS.md", "content": TICKED}),
        Say("Done."),
    ]
    with AnthropicApi(script) as api:
        loop = claude_loop(api, CLAUDE_CODE_MAX_RETRIES="0")
        loop.setting("preflight_backoff", '"0.2s"')
        done = loop.run("--max-iterations", "3")
        assert done.returncode == 0, done.stdout + done.stderr
        (down,) = loop.said("dependency_down")
        assert "429" in down["msg"] and not loop.said("failure")
        assert not loop.requests()

    with AnthropicApi([Fail(401)]) as api:
        loop = claude_loop(api, CLAUDE_CODE_MAX_RETRIES="0")
        (loop.ws / "TASKS.md").write_text(TASKS)
        blocked = loop.run("--max-iterations", "3")
        assert blocked.returncode == 2, blocked.stdout + blocked.stderr
        (request,) = loop.requests()
        told = json.dumps(request)
        # The StopFailure hook's error type: it ran to its end after Claude had exited.
        assert "authentication_failed" in told and "401" in told
        assert len(api.turns()) == 1  # asked at once: no second try


def test_a_stream_json_agent_without_a_prompt_stops_before_iteration_one(
    tmp_path: Path, claude_cli: Path, refusing_port: int
) -> None:
    loop = Loop(tmp_path / "ws", agent_env(tmp_path / "home", claude_cli, refusing_port))
    (loop.ws / "loopkit.toml").write_text(
        '[loop]\nagent = "claude -p --input-format stream-json --output-format stream-json '
        '--verbose"\n'
    )
    done = loop.lk("run", "--exit-on-block")
    assert done.returncode == 78 and "[loop] prompt" in done.stderr, done.stderr
    assert not (loop.ws / ".loopkit" / "logs").exists()
    doctor = loop.lk("doctor")  # what run refuses, doctor says in its words, with its exit
    [said] = done.stderr.splitlines()
    assert doctor.returncode == 78 and said.removeprefix("loopkit: error: ") in doctor.stdout
