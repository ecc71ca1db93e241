"""``loopkit unblock [--reply]``: answer the open block's request (or lift it), alone or under
a running loop."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import (
    ESCALATE,
    POLICY,
    Daemon,
    clean_env,
    files,
    lk,
    loopkit,
    record,
    runs_file,
    write_config,
)


def test_unblock_with_a_reply(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [path] = files(ws)
    done = loopkit("-C", str(ws), "unblock", "--reply", "B", env=clean_env(LOOPKIT_HUMAN="ana"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["chosen_option"] == "flow-b"
    assert not (ws / "BLOCKED.md").exists()
    resolution = json.loads(path.read_text())["resolution"]
    assert resolution["by"] == "ana" and resolution["via"] == "cli"
    again = loopkit("-C", str(ws), "unblock")
    assert again.returncode == 0 and "not blocked" in again.stderr


def test_unblock_without_a_reply(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    [path] = files(ws)
    resolution = json.loads(path.read_text())["resolution"]
    assert resolution["parsed_decision"] == "unblocked by hand"
    assert resolution["outcome"] == "unblocked"


def test_a_reply_lifts_its_block_and_the_first_answer_stands(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [path] = files(ws)
    request_id = path.stem
    assert (
        loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "A").returncode == 0
    )
    assert not (ws / "BLOCKED.md").exists()  # `reply` lifts the block, as a tap does
    done = loopkit("-C", str(ws), "unblock", "--reply", "B")
    assert done.returncode == 66 and "not blocked" in done.stderr
    assert json.loads(path.read_text())["resolution"]["chosen_option"] == "flow-a"


def test_unblock_reply_on_an_answered_block_says_how_to_lift_it(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    standing = (ws / "BLOCKED.md").read_text()
    assert lk(ws, "reply", "--request-id", path.stem, "--reply", "A").returncode == 0
    (ws / "BLOCKED.md").write_text(standing)  # a copy brought back (a sync, a backup)
    done = lk(ws, "unblock", "--reply", "B")
    assert done.returncode == 4 and "`loopkit unblock` without --reply" in done.stderr
    assert lk(ws, "unblock").returncode == 0 and not (ws / "BLOCKED.md").exists()
    assert record(ws, path.stem)["resolution"]["chosen_option"] == "flow-a"  # type: ignore[index]


def test_unblock_reply_reaches_the_running_loop(ws: Path) -> None:
    (ws / "agent.sh").write_text(
        'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}" >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
    )
    write_config(
        ws,
        '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "exit 1"\npause = "0s"\n',
    )
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        done = loopkit("-C", str(ws), "unblock", "--reply", "use Decimal, not float")
        assert done.returncode == 0, done.stderr
        daemon.wait_state(status="blocked", iteration=6)
    lines = runs_file(ws).read_text().splitlines()
    assert lines[3] == "4|use Decimal, not float"
    assert lines[4] == "5|"


def test_a_deferral_keeps_the_review_open_under_a_running_loop(ws: Path) -> None:
    write_config(ws, '[loop]\nagent = "true"\nverify = "exit 0"\npause = "1s"\n')
    asked = loopkit("-C", str(ws), "ask", "-s", "Check the menu on a phone", "-p", POLICY,
                    "--kind", "review", "--prompt", "Is the menu easy to close?", "--block",
                    "--json")  # fmt: skip
    assert asked.returncode == 2
    request_id = json.loads(asked.stdout)["request_id"]
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        done = loopkit("-C", str(ws), "unblock", "--reply", "defer: no phone at hand")
        assert done.returncode == 0, done.stderr
        daemon.wait_state(status="running")
    assert record(ws, request_id)["status"] == "deferred"
    assert record(ws, request_id)["resolution"] is None
