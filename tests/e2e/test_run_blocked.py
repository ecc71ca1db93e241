"""``loopkit run`` while blocked: BLOCKED.md removed or moved by hand resumes the loop and resets
the count, however soon it goes; a folder there stays a block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import LOOPKIT, Daemon, alive, loopkit, records, runs, setup


@pytest.mark.parametrize("how", ["rm", "mv"])
def test_unblock_by_hand_restarts_and_resets_the_counter(
    ws: Path, tmp_path: Path, how: str
) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        first = records(ws)[0]
        if how == "rm":
            (ws / "BLOCKED.md").unlink()
        else:
            (ws / "BLOCKED.md").rename(tmp_path / "moved-away.md")
        # Counter restarted at zero: the next block comes three failures later.
        state = daemon.wait_state(status="blocked", iteration=6)
        assert state["failures"] == 3
        resolved = json.loads((ws / "requests" / f"{first['request_id']}.json").read_text())
        assert resolved["status"] == "resolved"
        assert resolved["resolution"]["parsed_decision"] == "unblocked by hand"
        assert resolved["resolution"]["via"] == "blocked-file-removed"
        assert len(records(ws)) == 2


def test_deleted_right_after_start_is_not_missed(ws: Path) -> None:
    setup(ws, verify="exit 0\n")
    (ws / "BLOCKED.md").write_text("# Blocked\nby hand\n")
    with Daemon(ws, "--max-iterations", "1") as daemon:
        (ws / "BLOCKED.md").unlink()  # races the supervisor's start and its watch
        assert daemon.wait() == 0
    assert len(runs(ws)) == 1


def test_a_block_lifted_before_the_wait_still_resolves_and_resets(ws: Path) -> None:
    # The same path as "deleted the instant after it was raised": --exit-on-block leaves the
    # supervisor no time to wait, the human deletes BLOCKED.md, the next run picks it up.
    setup(ws)
    assert loopkit("-C", str(ws), "run", "--exit-on-block").returncode == 2
    [first] = records(ws)
    (ws / "BLOCKED.md").unlink()
    assert loopkit("-C", str(ws), "run", "--max-iterations", "1").returncode == 0
    resolved = json.loads((ws / "requests" / f"{first['request_id']}.json").read_text())
    assert resolved["status"] == "resolved"
    assert resolved["resolution"]["outcome"] == "unblocked"
    state = json.loads((ws / ".loopkit" / "state.json").read_text())
    assert state["failures"] == 1 and state["open_request"] is None
    assert len(records(ws)) == 1  # no second block at 4/3


def test_a_folder_at_the_block_path_stays_blocked_until_removed(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        (ws / "BLOCKED.md").unlink()
        (ws / "BLOCKED.md").mkdir()
        assert loopkit("-C", str(ws), "check").returncode == 65
        assert len(runs(ws)) == 3
        (ws / "BLOCKED.md").rmdir()
        daemon.wait_state(status="blocked", iteration=6)


def test_stop_agent_on_block_after_grace(ws: Path) -> None:
    agent = (
        "echo $$ > child.pid\n"
        f'"{LOOPKIT}" escalate -q "Q?" -c "c" -a "a" --choice "Go"\n'
        "sleep 300\n"
    )
    setup(ws, 'stop_agent_on_block = true\nblock_grace = "0.2s"', agent=agent)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        assert not alive(int((ws / "child.pid").read_text()))
