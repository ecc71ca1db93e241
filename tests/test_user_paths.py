"""Paths a user walks that are easy to get wrong: empty replies, answers given while no
supervisor waits, channels that cannot reach anyone, the words of a supervisor's question."""

from __future__ import annotations

import subprocess
from pathlib import Path

from test_cli_ask import ESCALATE, files, record
from test_supervisor import records, runs, setup

from helpers import clean_env, loopkit


def lk(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), *args, env=env)


def test_an_empty_reply_uses_up_nothing(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    for empty in ("", "   "):
        done = lk(ws, "unblock", "--reply", empty)
        assert done.returncode == 64 and "empty reply" in done.stderr
        done = lk(ws, "reply", "--request-id", path.stem, "--reply", empty)
        assert done.returncode == 64
    assert record(ws, path.stem)["status"] == "open" and (ws / "BLOCKED.md").exists()


def test_a_malformed_expected_updated_at_is_a_usage_error(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    done = lk(ws, "reply", "--request-id", path.stem, "--reply", "A",
              "--expected-updated-at", "yesterday")  # fmt: skip
    assert done.returncode == 64 and "updated_at" in done.stderr
    assert record(ws, path.stem)["status"] == "open"


def test_an_answer_given_while_no_supervisor_waited_is_applied_by_the_next_run(ws: Path) -> None:
    setup(ws)
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    [first] = records(ws)
    reply = ("reply", "--request-id", str(first["request_id"]), "--reply", "A")
    assert lk(ws, *reply).returncode == 0
    # The seed's way round (run.sh: `loopkit run --exit-on-block` again and again) goes on.
    again = lk(ws, "run", "--exit-on-block", "--max-iterations", "1")
    assert again.returncode == 0, again.stderr
    assert runs(ws)[3][1] == "retry" and not (ws / "BLOCKED.md").exists()


def test_unblock_reply_after_reply_says_how_to_lift_the_block(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    assert lk(ws, "reply", "--request-id", path.stem, "--reply", "A").returncode == 0
    done = lk(ws, "unblock", "--reply", "B")
    assert done.returncode == 4 and "`loopkit unblock` without --reply" in done.stderr
    assert lk(ws, "unblock").returncode == 0 and not (ws / "BLOCKED.md").exists()
    assert record(ws, path.stem)["resolution"]["chosen_option"] == "flow-a"  # type: ignore[index]


def test_run_refuses_a_channel_that_cannot_reach_anyone(ws: Path) -> None:
    setup(ws)
    for channel, variable in (("telegram", "TOKEN"), ("slack", "WEBHOOK"), ("dial", "DIAL_CMD")):
        done = lk(ws, "run", env=clean_env(LOOPKIT_HITL_CHANNEL=channel))
        assert done.returncode == 78, done.stderr
        assert variable in done.stderr and "Traceback" not in done.stderr
    assert not runs(ws)  # refused before the first iteration


def test_max_iterations_does_not_pause_after_the_last(ws: Path) -> None:
    setup(ws, 'pause = "1h"', verify="exit 0\n")
    done = lk(ws, "run", "--max-iterations", "1")  # the helper's 60 s timeout would trip
    assert done.returncode == 0 and len(runs(ws)) == 1


def test_an_agent_that_cannot_start_is_named_and_the_prompt_fits_a_phone(ws: Path) -> None:
    task = "Make the checkout page render prices in the customer's own currency and locale " * 2
    setup(ws, 'task_file = "PLAN.md"\nagent = ["no-such-agent-xyz"]')
    (ws / "PLAN.md").write_text(f"- [ ] {task}\n")
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    [block] = records(ws)
    prompt = str(block["prompt"])
    assert prompt.startswith("The agent failed 3 times in a row on task")
    assert len(prompt) <= 120
    assert "no-such-agent-xyz" in (ws / "BLOCKED.md").read_text()


def test_the_answer_hint_offers_only_the_letters_there_are(ws: Path) -> None:
    two = ["escalate", "-q", "Which flow?", "-c", "c", "-a", "a",
           "--choice", "Flow A — old", "--choice", "Flow B — new"]  # fmt: skip
    assert lk(ws, *two).returncode == 2
    text = (ws / "BLOCKED.md").read_text()
    assert "(or B, or your own words)" in text and "C," not in text


def test_a_broken_config_never_loses_the_agent_s_question(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\npuase = "1s"\n')  # a typo
    done = lk(ws, *ESCALATE)
    assert done.returncode == 78, done.stderr  # the config error, as SPEC says...
    assert "loopkit.toml:3" in done.stderr and "fix loopkit.toml" in done.stderr
    assert len(files(ws)) == 1 and (ws / "BLOCKED.md").exists()  # ...and the block stands
    assert lk(ws, "check").returncode == 2
    assert lk(ws, "run").returncode == 78  # the supervisor itself still refuses to start
