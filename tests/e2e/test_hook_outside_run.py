"""A Claude Code gate outside ``loopkit run`` (SPEC §26): in a workspace ``loopkit init`` set
up that never ran ``loopkit run``, the hook's question is answered from the phone (``loopkit
serve``'s relay), the inbox and another folder, like any other — the workspace is
registered by ``init``, and by the first hook that asks."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_serve import ANA, serving

from fakeserver import FakeServer
from helpers import LOOPKIT, PHONE_CHAT, clean_env, loopkit, phone_env, wait_until

pytestmark = pytest.mark.usefixtures("ws")


@pytest.fixture
def held() -> Iterator[list[subprocess.Popen[str]]]:
    """The hooks a test started: any still waiting at its end is killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for one in started:
        if one.poll() is None:
            one.kill()
        one.wait(timeout=10)
        for pipe in (one.stdout, one.stderr):
            if pipe is not None:
                pipe.close()


def held_call(
    ws: Path, env: dict[str, str], held: list[subprocess.Popen[str]]
) -> subprocess.Popen[str]:
    """Claude Code's PreToolUse hook, as installed, for a call the default rules hold."""
    settings = json.loads((ws / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["PreToolUse"]
    command = group["hooks"][0]["command"]
    event = {"session_id": "s-1", "cwd": str(ws), "hook_event_name": "PreToolUse",
             "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "t-1",
             "tool_input": {"command": "rm -rf build"}}  # fmt: skip
    waiting = subprocess.Popen(command, shell=True, cwd=ws, text=True, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)  # fmt: skip
    held.append(waiting)
    assert waiting.stdin is not None
    waiting.stdin.write(json.dumps(event))
    waiting.stdin.close()
    return waiting


def the_request(ws: Path) -> dict[str, object]:
    found = wait_until(lambda: list((ws / "requests").glob("*.json")), 20, "the hook's request")
    assert isinstance(found, list) and len(found) == 1
    return dict(json.loads(found[0].read_text()))


def verdict(waiting: subprocess.Popen[str]) -> tuple[str, str]:
    assert waiting.stdout is not None and waiting.stderr is not None
    code = waiting.wait(timeout=30)  # its answer is one short line: no pipe fills
    out, err = waiting.stdout.read(), waiting.stderr.read()
    assert code == 0, err
    said = json.loads(out)["hookSpecificOutput"]
    return said["permissionDecision"], said["permissionDecisionReason"]


def set_up(ws: Path, env: dict[str, str]) -> None:
    done = loopkit("-C", str(ws), "init", "--agent", "claude", env=env)
    assert done.returncode == 0, done.stderr
    with (ws / "loopkit.toml").open("a") as file:
        file.write('\n[hooks]\nwait = "60s"\n')


def test_a_gate_in_a_workspace_init_set_up_is_answered_from_the_phone(
    ws: Path, server: FakeServer, tmp_path: Path, held: list[subprocess.Popen[str]]
) -> None:
    env = phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    set_up(ws, env)
    waiting = held_call(ws, env, held)
    record = the_request(ws)
    with serving(env, tmp_path):
        wait_until(lambda: record_of(ws)["delivery"], 20, "its delivery recorded")
        delivered = record_of(ws)["delivery"]
        assert isinstance(delivered, list)
        message_id = delivered[0]["message_id"]
        server.push_update(
            callback_query={
                "id": "cb-1", "from": ANA, "data": f"{record['request_id']}:1",  # B) Reject
                "message": {"message_id": message_id, "chat": {"id": PHONE_CHAT}, "text": "x"},
            }
        )  # fmt: skip
        decision, reason = verdict(waiting)
    assert decision == "deny" and "rejected" in reason
    assert record_of(ws)["resolution"]["via"] == "telegram"  # type: ignore[index]


def record_of(ws: Path) -> dict[str, object]:
    [path] = (ws / "requests").glob("*.json")
    return dict(json.loads(path.read_text()))


@pytest.mark.parametrize("registered_by", ["init", "the hook"])
def test_a_gate_outside_run_is_in_the_inbox_and_answered_from_another_folder(
    ws: Path, tmp_path: Path, registered_by: str, held: list[subprocess.Popen[str]]
) -> None:
    env = clean_env(LOOPKIT_HITL_CHANNEL="none")
    set_up(ws, env)
    if registered_by == "the hook":  # set up before init registered (or in another home)
        shutil.rmtree(Path(env["LOOPKIT_HOME"]) / "workspaces")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    waiting = held_call(ws, env, held)
    record = the_request(ws)
    listed = loopkit("inbox", "--json", cwd=elsewhere, env=env)
    assert listed.returncode == 0, listed.stderr
    assert [one["request_id"] for one in json.loads(listed.stdout)] == [record["request_id"]]
    reply = "reject: keep build, it holds the fixtures"
    answer = loopkit("reply", "--request-id", str(record["request_id"]), "--reply", reply,
                     cwd=elsewhere, env=env)  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    decision, reason = verdict(waiting)
    assert decision == "deny" and "keep build, it holds the fixtures" in reason
    assert not any(elsewhere.iterdir())  # answering from there made no workspace


def test_a_call_no_rule_holds_registers_nothing(ws: Path) -> None:
    env = clean_env()
    done = subprocess.run(
        [str(LOOPKIT), "hook", "claude", "pretooluse"], cwd=ws, text=True, env=env,
        input=json.dumps({"session_id": "s", "cwd": str(ws), "hook_event_name": "PreToolUse",
                          "tool_name": "Bash", "tool_input": {"command": "pytest -q"}}),
        capture_output=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert not (Path(env["LOOPKIT_HOME"]) / "workspaces").exists()
