from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import config
from loopkit.errors import ConfigError


def write(ws: Path, text: str) -> None:
    (ws / "loopkit.toml").write_text(text)


def test_defaults_without_a_file(ws: Path) -> None:
    cfg = config.load(ws, {})
    assert cfg.file is None
    assert cfg.loop.max_verify_failures == 3
    assert cfg.loop.pause == 5.0
    assert cfg.loop.iteration_timeout == 3600.0
    assert cfg.escalation.channel == "none"
    assert cfg.escalation.blocked_file == "BLOCKED.md"
    assert cfg.escalation.timeout_action == "queue"  # SPEC §9: nothing irreversible while waiting
    assert cfg.channels.telegram_api == "https://api.telegram.org"


def test_file_values_and_environment_wins(ws: Path) -> None:
    write(
        ws,
        """
[loop]
agent = ["python3", "agent.py"]
verify = "pytest -q"
pause = "250ms"
iteration_timeout = "1h30m"
required_env = ["API_KEY"]

[escalation]
channel = "slack"
timeout_minutes = 5
timeout_action = "skip"
""",
    )
    cfg = config.load(ws, {"LOOPKIT_HITL_CHANNEL": "dial", "LOOPKIT_HITL_DIAL_CMD": "cat"})
    assert cfg.loop.agent == ("python3", "agent.py")
    assert cfg.loop.verify == "pytest -q"
    assert cfg.loop.pause == pytest.approx(0.25)
    assert cfg.loop.iteration_timeout == 5400.0
    assert cfg.loop.required_env == ("API_KEY",)
    assert cfg.escalation.channel == "dial"
    assert cfg.escalation.timeout_action == "skip"
    assert cfg.channels.dial_cmd == "cat"
    with pytest.raises(AttributeError):
        cfg.loop.pause = 1  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[loop]\nagent = "a"\nverfy = "pytest"\n', ":3: unknown key 'verfy' in [loop]"),
        ("[escalation]\nchannel = 3\n", ":2: [escalation] channel: expected a channel name"),
        ('[loop]\npause = "soon"\n', ":2: [loop] pause: 'soon' is not a duration"),
        ("[loop]\nmax_verify_failures = 0\n", ":2: [loop] max_verify_failures"),
        ('[escalation]\ntimeout_action = "later"\n', "expected one of skip, queue, retry, abort"),
        ("[loops]\nagent = 'a'\n", ":1: unknown table [loops] (did you mean 'loop'?"),
        ('[loop]\nagent = "a\n', ":2:"),
        ("[loop]\nagent = [1, 2]\n", "expected a command"),
        ("[loop]\ntask_pattern = '(['\n", "not a valid regular expression"),
        ('[loop]\nresume = "claude -p --resume"\n', ":2: [loop] resume: the resume command must"),
    ],
)
def test_invalid_files_name_file_line_and_key(ws: Path, text: str, expected: str) -> None:
    write(ws, text)
    with pytest.raises(ConfigError) as caught:
        config.load(ws, {})
    message = str(caught.value)
    assert str(ws / "loopkit.toml") in message
    assert expected in message
    assert "\n" not in message


def test_syntax_error_names_line_and_column(ws: Path) -> None:
    write(ws, "[loop]\nagent = 'ok'\npause = = 3\n")
    with pytest.raises(ConfigError, match=r"loopkit\.toml:3:\d+: TOML syntax error"):
        config.load(ws, {})


def test_allowed_users_must_be_numeric(ws: Path) -> None:
    with pytest.raises(ConfigError, match="LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS: 'ana'"):
        config.load(ws, {"LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS": "123, ana"})
    cfg = config.load(ws, {"LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS": "123, 456"})
    assert cfg.channels.telegram_allowed_users == (123, 456)


def test_secrets_come_from_the_environment(ws: Path) -> None:
    cfg = config.load(
        ws,
        {
            "LOOPKIT_HITL_TELEGRAM_TOKEN": "123456:secret-token-value-xyz",
            "LOOPKIT_HITL_SLACK_WEBHOOK": "https://hooks.slack.com/services/T/B/X",
            "LOOPKIT_HITL_TELEGRAM_API": "http://127.0.0.1:9/",
        },
    )
    assert set(cfg.channels.secrets()) == {
        "123456:secret-token-value-xyz",
        "https://hooks.slack.com/services/T/B/X",
    }
    assert cfg.channels.telegram_api == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(5, 5.0), (2.5, 2.5), ("500ms", 0.5), ("5s", 5.0), ("10m", 600.0), ("1h30m", 5400.0)],
)
def test_durations(value: object, seconds: float) -> None:
    assert config.parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "5 minutes", "m5", -1, True, "5x"])
def test_bad_durations(value: object) -> None:
    with pytest.raises(ValueError):
        config.parse_duration(value)


def test_a_hook_wait_at_or_past_the_hooks_timeout_is_refused(tmp_path: Path) -> None:
    """Claude Code stops a hook after the timeout `hook install` writes (600 s) and lets the
    call run: a wait that long would open the gate it is meant to hold."""
    for wait in ('"600s"', '"10m"', "900"):
        (tmp_path / "loopkit.toml").write_text(f"[hooks]\nwait = {wait}\n")
        with pytest.raises(config.ConfigError, match="the hook's timeout"):
            config.load(tmp_path, environ={})
    (tmp_path / "loopkit.toml").write_text('[hooks]\nwait = "590s"\n')
    assert config.load(tmp_path, environ={}).hooks.wait == 590.0


def test_resume_and_dependency_wait(ws: Path) -> None:
    """SPEC §18: the agent's own session, resumed by id; how long its API may be down."""
    assert config.load(ws, {}).loop.resume is None
    assert config.load(ws, {}).loop.dependency_wait == 1800.0
    write(ws, '[loop]\nresume = ["claude", "-p", "--resume", "{session_id}"]\n'
              'dependency_wait = "5m"\n')  # fmt: skip
    loaded = config.load(ws, {}).loop
    assert loaded.resume == ("claude", "-p", "--resume", "{session_id}")
    assert loaded.dependency_wait == 300.0
