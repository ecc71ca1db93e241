"""The Slack app's and Apprise's settings: read from the environment, validated, secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.config import AGENT_HIDDEN_ENV
from loopkit.errors import ConfigError


def test_the_slack_app_and_apprise_settings_are_read(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "slack"\nslack_mode = "socket"\n')
    env = {
        "LOOPKIT_HITL_SLACK_BOT_TOKEN": "xoxb-1-2-abc",
        "LOOPKIT_HITL_SLACK_APP_TOKEN": "xapp-1-A1-2-def",
        "LOOPKIT_HITL_SLACK_CHANNEL": "C0LOOPS",
        "LOOPKIT_HITL_SLACK_ALLOWED_USERS": "U01, U02,,",
        "LOOPKIT_HITL_APPRISE_URLS": "ntfys://ntfy.sh/t1, mailto://me:pw@example.com\njson://h",
    }
    channels = config_mod.load(ws, env).channels
    assert channels.slack_socket and channels.slack_allowed_users == ("U01", "U02")
    assert channels.slack_api == "https://slack.com/api/"
    assert channels.apprise_urls == (
        "ntfys://ntfy.sh/t1",
        "mailto://me:pw@example.com",
        "json://h",
    )
    secrets = channels.secrets()
    for value in ("xoxb-1-2-abc", "xapp-1-A1-2-def", "mailto://me:pw@example.com"):
        assert value in secrets
    for name in ("LOOPKIT_HITL_SLACK_BOT_TOKEN", "LOOPKIT_HITL_SLACK_APP_TOKEN",
                 "LOOPKIT_HITL_APPRISE_URLS"):  # fmt: skip
        assert name in AGENT_HIDDEN_ENV
    # The environment wins over the file (serve reads no workspace).
    webhook = config_mod.load(ws, {**env, "LOOPKIT_HITL_SLACK_MODE": "webhook"}).channels
    assert not webhook.slack_socket


def test_a_wrong_slack_mode_is_a_config_error_naming_the_line(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nslack_mode = "sockets"\n')
    with pytest.raises(ConfigError) as caught:
        config_mod.load(ws, {})
    assert str(caught.value).startswith(f"{ws / 'loopkit.toml'}:2: [escalation] slack_mode: ")
    with pytest.raises(ConfigError, match="LOOPKIT_HITL_SLACK_MODE='app'"):
        (ws / "loopkit.toml").write_text("")
        config_mod.load(ws, {"LOOPKIT_HITL_SLACK_MODE": "app"})
