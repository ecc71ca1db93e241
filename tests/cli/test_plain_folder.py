"""A command that answers or reads never makes a workspace (SPEC sections 15 and 17): run in
a folder that is no workspace, ``reply``, ``requests``, ``inbox`` and ``status`` leave it as
they found it — whether the request is found elsewhere or nowhere."""

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
        (["status"], 0),
        (["status", "--json"], 0),
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
