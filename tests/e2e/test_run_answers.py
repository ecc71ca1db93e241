"""A human's answer reaches ``loopkit run``: the decision goes to the next agent, Abort exits 3,
and every answer is applied once, whenever it was given; a human's own BLOCKED.md stays."""

from __future__ import annotations

import json
from pathlib import Path

from loopkit import config as config_mod
from loopkit.requests.models import Resolution
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from helpers import Daemon, lk, loopkit, records, runs, setup


def store(ws: Path) -> RequestStore:
    return RequestStore(Workspace.of(config_mod.load(ws, {})))


def answer(ws: Path, request_id: str, *, chosen: str | None, text: str) -> None:
    store(ws).resolve(
        request_id,
        Resolution(
            request_id=request_id,
            chosen_option=chosen,
            free_text=None if chosen else text,
            parsed_decision=chosen or text,
            resolved_at="2026-12-02T13:00:00Z",
            by="ana",
            via="cli",
        ),
    )


def test_an_answer_resumes_with_the_decision(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        request_id = str(records(ws)[0]["request_id"])
        answer(ws, request_id, chosen=None, text="use Decimal for money")
        daemon.wait_state(status="blocked", iteration=6)
    assert not (ws / "BLOCKED.md").read_text().count(request_id)  # the new block is another
    assert [r[1] for r in runs(ws)] == ["", "", "", "use Decimal for money", "", ""]
    last = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
    assert last["parsed_decision"] == "use Decimal for money" and last["by"] == "ana"


def test_an_abort_answer_exits_3(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        answer(ws, str(records(ws)[0]["request_id"]), chosen="abort", text="")
        assert daemon.wait() == 3
    assert len(runs(ws)) == 3


def test_an_abort_answer_is_applied_once(ws: Path) -> None:
    setup(ws, "max_verify_failures = 1")
    assert loopkit("-C", str(ws), "run", "--exit-on-block").returncode == 2
    [record] = records(ws)
    done = loopkit(
        "-C", str(ws), "reply", "--request-id", str(record["request_id"]), "--reply", "abort"
    )
    assert done.returncode == 0
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3  # the human chose Abort: applied now...
    again = loopkit("-C", str(ws), "run", "--exit-on-block", "--max-iterations", "1")
    # ...and never again: the restart runs an iteration (whose failure blocks anew).
    assert again.returncode == 2, again.stderr
    assert len(runs(ws)) == 2


def test_after_an_applied_abort_the_next_agent_gets_no_decision(ws: Path) -> None:
    setup(ws, "max_verify_failures = 1")
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    [first] = records(ws)
    answered = lk(ws, "reply", "--request-id", str(first["request_id"]), "--reply", "abort")
    assert answered.returncode == 0
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    lk(ws, "run", "--exit-on-block", "--max-iterations", "1")
    assert [run[1] for run in runs(ws)] == ["", ""]  # LOOPKIT_DECISION: not "abort" again


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


def test_a_restored_block_does_not_apply_its_answer_again(ws: Path) -> None:
    setup(ws)
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    request_id = str(records(ws)[0]["request_id"])
    saved = (ws / "BLOCKED.md").read_text()
    assert lk(ws, "reply", "--request-id", request_id, "--reply", "abort").returncode == 0  # Abort
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
