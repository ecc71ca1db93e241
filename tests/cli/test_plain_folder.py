"""A command that answers or reads never makes a workspace (SPEC sections 15 and 17): run in
a folder that is no workspace, ``reply``, ``requests``, ``inbox`` and ``status`` leave it as
they found it — whether the request is found elsewhere or nowhere. ``status`` and
``unblock``, which are about one workspace, say that this is none (SPEC §26: exit 66, never
"idle" or "not blocked"); ``reply --request-id`` answers a request anywhere, and says so only
when the request is found nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import clean_env, loopkit


@pytest.fixture
def asked(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A registered workspace with an open block, and the environment of its machine."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = clean_env(LOOPKIT_HOME=str(tmp_path / "home"), LOOPKIT_HITL_CHANNEL="none")
    choices = ["--choice", "Keep — as is", "--choice", "Migrate — to v2"]
    done = loopkit(
        "-C", str(ws), "escalate", "-q", "Which flow?", "-c", "checkout", "-a", "read", *choices,
        env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    listed = json.loads(loopkit("-C", str(ws), "requests", "--json", env=env).stdout)
    return ws, str(listed[0]["request_id"]), env


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["status"], 66),  # not a loopkit workspace: never "idle"
        (["status", "--json"], 66),
        (["unblock"], 66),  # never "not blocked"
        (["unblock", "--reply", "B"], 66),
        (["requests"], 0),
        (["requests", "--json"], 0),
        (["requests", "show", "{id}"], 0),
        (["requests", "show", "nosuch"], 66),
        (["requests", "wait", "nosuch", "--timeout", "0"], 66),
        (["inbox"], 0),
        (["inbox", "--json"], 0),
        (["reply", "--request-id", "nosuch", "--reply", "A"], 66),
        (["reply", "--request-id", "{id}", "--reply", "A"], 0),
        (["dismiss", "nosuch"], 66),
        (["dismiss", "{id}"], 0),
    ],
)
def test_reading_and_answering_leave_a_plain_folder_alone(
    tmp_path: Path, asked: tuple[Path, str, dict[str, str]], command: list[str], code: int
) -> None:
    ws, request_id, env = asked
    plain = tmp_path / "plain"
    plain.mkdir()
    done = loopkit(*[word.replace("{id}", request_id) for word in command], cwd=plain, env=env)
    assert done.returncode == code, done.stderr
    assert list(plain.iterdir()) == [], f"{command} wrote into a plain folder"
    if command[0] in ("reply", "dismiss") and "{id}" in command:
        assert done.returncode == 0, done.stderr
        status = "resolved" if command[0] == "reply" else "dismissed"
        assert json.loads((ws / "requests" / f"{request_id}.json").read_text())["status"] == status


@pytest.mark.parametrize("command", [["status"], ["status", "--json"], ["unblock"],
                                     ["unblock", "--reply", "B"]])  # fmt: skip
def test_in_the_wrong_folder_status_and_unblock_say_so(tmp_path: Path, command: list[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = clean_env(LOOPKIT_HOME=str(tmp_path / "home"))
    for done in (loopkit(*command, cwd=plain, env=env),
                 loopkit("-C", str(plain), *command, cwd=tmp_path, env=env)):  # fmt: skip
        assert done.returncode == 66, done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith(f"loopkit: error: not a loopkit workspace: {plain} ")
        assert "idle" not in done.stdout and "not blocked" not in done.stderr + done.stdout
    assert list(plain.iterdir()) == []


def test_a_request_found_nowhere_from_the_wrong_folder_says_that_too(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = clean_env(LOOPKIT_HOME=str(tmp_path / "home"))
    done = loopkit("reply", "--request-id", "0a1b2c3d4e5f", "--reply", "B", cwd=plain, env=env)
    assert done.returncode == 66
    assert f"({plain} is not a loopkit workspace)" in done.stderr


def test_a_workspace_is_found_from_below_and_by_its_block_alone(tmp_path: Path) -> None:
    env = clean_env(LOOPKIT_HOME=str(tmp_path / "home"))
    ws = tmp_path / "ws"
    (ws / "src" / "deep").mkdir(parents=True)
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\n')
    assert loopkit("status", cwd=ws / "src" / "deep", env=env).returncode == 0
    handwritten = tmp_path / "agent-wrote-it"  # an agent's BLOCKED.md, before loopkit ran
    handwritten.mkdir()
    (handwritten / "BLOCKED.md").write_text("# Blocked\n\nWhich flow?\n")
    done = loopkit("unblock", cwd=handwritten, env=env)
    assert done.returncode == 0, done.stderr
    assert not (handwritten / "BLOCKED.md").exists()
