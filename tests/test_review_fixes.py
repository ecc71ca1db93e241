"""Answers applied once even when their BLOCKED.md comes back; a human's own BLOCKED.md is
never removed by loopkit; what gate shows keeps the command readable and its secrets out;
a broken config keeps what is valid when a block must be raised."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_cli_ask import ESCALATE, files
from test_supervisor import records, runs, setup

from loopkit.redact import dial_secrets, mask_command

from helpers import clean_env, loopkit


def lk(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), *args, env=env)


def test_a_restored_block_does_not_apply_its_answer_again(ws: Path) -> None:
    setup(ws)
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    request_id = str(records(ws)[0]["request_id"])
    saved = (ws / "BLOCKED.md").read_text()
    assert lk(ws, "reply", "--request-id", request_id, "--reply", "C").returncode == 0  # Abort
    assert lk(ws, "run", "--exit-on-block", "--max-iterations", "1").returncode == 3
    (ws / "BLOCKED.md").write_text(saved)  # a checkout, a stash pop, an editor's re-save
    again = lk(ws, "run", "--exit-on-block", "--max-iterations", "1")
    assert again.returncode == 2, again.stderr  # a block to lift by hand, not a second Abort
    assert json.loads((ws / "requests" / f"{request_id}.json").read_text())["applied_at"]


def test_a_hand_written_block_is_never_removed_by_loopkit(ws: Path) -> None:
    setup(ws)
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    request_id = str(records(ws)[0]["request_id"])
    assert lk(ws, "reply", "--request-id", request_id, "--reply", "A").returncode == 0
    (ws / "BLOCKED.md").write_text("# Blocked\nPaused by hand: reworking the plan.\n")
    done = lk(ws, "run", "--exit-on-block", "--max-iterations", "1")
    assert done.returncode == 2 and (ws / "BLOCKED.md").exists()
    assert len(runs(ws)) == 3  # the agent did not run past the human's own block


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["psql", "postgres://app:prod@db/prod"], ["psql", "postgres://app:***@db/prod"]),
        (["git", "checkout", "3f9a1c0b7d2e4f5a6b7c8d9e"], None),  # no guessing by shape
        (["terraform", "destroy", "-target=aws_instance.web01"], None),
        (["curl", "-u", "admin:admin", "https://x/admin", "--data", "user=admin"],
         ["curl", "-u", "admin:***", "https://x/admin", "--data", "user=admin"]),
        (["curl", "-u", "sk_test_4eC39HqLyjWDarjtT1zdp7dc:", "https://x"],
         ["curl", "-u", "***", "https://x"]),
        (["x", "--token=Ab&cdefghijk"], ["x", "--token=***"]),
        (["curl", "-d", "text=hi",
          "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX"],
         ["curl", "-d", "text=hi", "https://***"]),
        (["curl", "https://api.telegram.org/bot123456789:AAEhBP0av28Q1s-Zz9aBcDeFgHiJkLmNoPq/getMe"],
         ["curl", "https://api.telegram.org/bot***/getMe"]),
        (["sh", "-c", "psql postgres://u:hunter2pw@h/db; mysql --password s3cr3t9"],
         ["sh", "-c", "psql postgres://u:***@h/db; mysql --password ***"]),
    ],
)  # fmt: skip
def test_gate_shows_the_command_with_only_its_secrets_masked(
    argv: list[str], shown: list[str] | None
) -> None:
    assert mask_command(argv) == (argv if shown is None else shown)


def test_a_token_in_the_user_part_is_a_dial_secret() -> None:
    stripe = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
    assert stripe in dial_secrets(f"curl -u {stripe}: https://x")
    assert "Ab&cdefghijk" in dial_secrets("x --token=Ab&cdefghijk")


def test_the_gate_digest_is_not_shown_beside_the_masked_command(ws: Path) -> None:
    assert lk(ws, "gate", "--", "mysql", "--password", "4821", "prod").returncode == 2
    [path] = files(ws)
    digest = json.loads(path.read_text())["gate"]["sha256"]
    assert digest not in (ws / "BLOCKED.md").read_text()
    assert "4821" not in (ws / "BLOCKED.md").read_text() + path.read_text()


def test_a_marker_past_the_first_4096_characters_counts_as_missing(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text(
        "# Blocked\n{{ question }}\n{% for a in attempted %}- {{ a }}\n{% endfor %}"
        "<!-- loopkit request: {{ request_id }} -->\n"
    )
    long = ["x" * 600] * 10
    args = [a for item in long for a in ("-a", item)]
    done = lk(ws, "escalate", "-q", "Which flow?", "-c", "c", *args, "--choice", "A — a")
    assert done.returncode == 2 and "lacks the marker" in done.stderr
    assert lk(ws, "unblock", "--reply", "A").returncode == 0  # answerable: the fallback has it


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
