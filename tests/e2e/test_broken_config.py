"""A broken config or environment is a config error (exit 78), yet the agent's question is
never lost: the block is raised with the valid settings."""

from __future__ import annotations

from pathlib import Path

from helpers import ESCALATE, clean_env, files, lk, loopkit, write_config


def test_cli_corrupt_config_exits_78_with_one_line(ws: Path) -> None:
    write_config(ws, "[loop\nagent = 'x'\n")
    done = loopkit("-C", str(ws), "doctor")
    assert done.returncode == 78  # as `run` exits on it (SPEC §26: doctor's verdict is run's)
    assert "TOML syntax error" in done.stdout
    done = loopkit(
        "-C", str(ws), "escalate", "-q", "Q?", "-c", "ctx", "-a", "tried", "--choice", "A"
    )
    assert done.returncode == 78
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "loopkit.toml:1" in lines[0] and "Traceback" not in done.stderr
    # ...and the question is not lost: the block is raised all the same.
    assert "the block was raised anyway" in lines[0]
    assert (ws / "BLOCKED.md").exists() and len(list((ws / "requests").glob("*.json"))) == 1


def test_a_broken_config_never_loses_the_agent_s_question(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\npuase = "1s"\n')  # a typo
    done = lk(ws, *ESCALATE)
    assert done.returncode == 78, done.stderr  # the config error, as SPEC says...
    assert "loopkit.toml:3" in done.stderr and "fix loopkit.toml" in done.stderr
    assert len(files(ws)) == 1 and (ws / "BLOCKED.md").exists()  # ...and the block stands
    assert lk(ws, "check").returncode == 2
    assert lk(ws, "run").returncode == 78  # the supervisor itself still refuses to start


def test_a_broken_config_keeps_its_valid_block_settings(ws: Path) -> None:
    (ws / "loopkit.toml").write_text(
        '[loop]\npuase = "1s"\n[escalation]\nblocked_file = "STOP.md"\nchannel = "none"\n'
    )
    done = lk(ws, *ESCALATE)
    assert done.returncode == 78 and (ws / "STOP.md").exists()
    assert not (ws / "BLOCKED.md").exists()


def test_a_bad_environment_setting_does_not_lose_the_question(ws: Path) -> None:
    env = clean_env(LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS="alice")
    done = lk(ws, *ESCALATE, env=env)
    assert done.returncode == 78 and "ALLOWED_USERS" in done.stderr
    assert (ws / "BLOCKED.md").exists() and len(files(ws)) == 1
