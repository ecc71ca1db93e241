"""doctor and send-test know the Slack app (slack_mode = "socket"): token shapes, auth.test,
the channel, Socket Mode — each problem one line with its fix — against a fake Slack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.setup.doctor import diagnose, send_test

from fakeslack import FakeSlack
from helpers import clean_env, loopkit


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    try:
        yield fake
    finally:
        fake.close()


def slack_findings(ws: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
                   **over: str) -> list[tuple[str, str]]:  # fmt: skip
    (ws / "loopkit.toml").write_text('[escalation]\nslack_mode = "socket"\n')
    for key, value in {**slack.env(), **over}.items():
        monkeypatch.setenv(key, value)
    return [(f.level, f.text) for f in diagnose(ws) if f.topic.startswith("channel")]


def test_a_sound_app_is_all_ok(ws: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    found = slack_findings(ws, slack, monkeypatch)
    assert [level for level, _ in found] == ["ok", "ok", "ok"], found
    assert "the app is in #loops" in found[1][1]
    assert len(slack.called("apps.connections.open")) == 1 and slack.connects == 0


@pytest.mark.parametrize(
    ("change", "env", "expected"),
    [
        ({}, {"LOOPKIT_HITL_SLACK_BOT_TOKEN": "xapp-1-A0-1-x"},
         "LOOPKIT_HITL_SLACK_BOT_TOKEN does not start with xoxb-"),
        ({"bot_token": "xoxb-new"}, {}, "auth.test: invalid_auth — LOOPKIT_HITL_SLACK_BOT_TOKEN "
         "is not valid: copy it again"),
        ({"members": set()}, {}, "the app is not in C0LOOPS: type /invite @<your app> there"),
        ({"app_scopes": ()}, {}, "apps.connections.open: missing_scope — the app lacks the "
         "scope connections:write"),
        ({"app_token": "xapp-1-A0FAKEAPP1-9-new"}, {}, "apps.connections.open: invalid_auth — "
         "LOOPKIT_HITL_SLACK_APP_TOKEN is not valid"),
    ],
)  # fmt: skip
def test_each_problem_is_one_line_with_its_fix(
    ws: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch,
    change: dict[str, object], env: dict[str, str], expected: str,
) -> None:  # fmt: skip
    given = slack.env(**env)
    for key, value in change.items():
        setattr(slack, key, value)
    found = slack_findings(ws, slack, monkeypatch, **given)
    problems = [text for level, text in found if level == "problem"]
    assert len(problems) == 1, found
    assert problems[0].startswith(expected) and "\n" not in problems[0]
    assert slack.bot_token not in problems[0] and "xapp-1-A0FAKEAPP1-3333" not in problems[0]


def test_send_test_posts_one_block_or_says_why_not(ws: Path, slack: FakeSlack) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nslack_mode = "socket"\n')
    sent = loopkit("-C", str(ws), "send-test", env=clean_env(**slack.env()))
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.rstrip().endswith("sent via slack")
    [post] = slack.called("chat.postMessage")
    assert post.body["blocks"][1]["elements"][0]["value"] == "send-test:0"
    slack.members = set()  # the app was removed from the channel
    config = config_mod.load(ws, slack.env())
    outcome, _ = send_test(config)
    assert outcome.ok is False and outcome.error == (
        "chat.postMessage: not_in_channel — the app is not in C0LOOPS: type /invite "
        "@<your app> there"
    )
