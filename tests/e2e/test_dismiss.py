"""``loopkit dismiss ID``: a request nobody will answer is closed — never answered — once, from
any folder, by a human only; a ghost (its BLOCKED.md deleted with nobody waiting) says so in
``status`` and ``inbox`` (SPEC section 16)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import (
    ESCALATE,
    Daemon,
    clean_env,
    files,
    gate,
    lk,
    loopkit,
    record,
    runs_file,
    write_config,
)


def test_dismiss_closes_it_from_any_folder_once(ws: Path, tmp_path: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    rid = path.stem
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = loopkit("dismiss", rid, "--reason", "the agent was rebuilt", cwd=elsewhere,
                   env=clean_env(LOOPKIT_HUMAN="ana"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"request {rid} dismissed; BLOCKED.md removed\n"
    assert not (ws / "BLOCKED.md").exists() and not (elsewhere / ".loopkit").exists()
    after = record(ws, rid)
    assert after["status"] == "dismissed"
    assert after["resolution"] == {
        "request_id": rid, "chosen_option": None, "free_text": None,
        "parsed_decision": "dismissed", "resolved_at": after["resolution"]["resolved_at"],  # type: ignore[index]
        "outcome": "dismissed", "reason": "the agent was rebuilt", "by": "ana", "via": "cli",
    }  # fmt: skip
    again = loopkit("dismiss", rid, cwd=elsewhere)
    assert again.returncode == 4 and again.stderr.count("\n") == 1
    assert "was dismissed by ana" in again.stderr
    replied = lk(ws, "reply", "--request-id", rid, "--reply", "A")
    assert replied.returncode == 4 and record(ws, rid)["status"] == "dismissed"
    waited = lk(ws, "requests", "wait", rid, "--timeout", "0")
    assert waited.returncode == 3, waited.stderr
    assert json.loads(waited.stdout)["outcome"] == "dismissed"
    listed = json.loads(lk(ws, "requests", "--status", "dismissed", "--json").stdout)
    assert [r["request_id"] for r in listed] == [rid]


def test_no_such_request_is_66(ws: Path) -> None:
    done = lk(ws, "dismiss", "nope")
    assert done.returncode == 66 and done.stderr.count("\n") == 1
    assert lk(ws, "dismiss").returncode == 64  # no id: a usage error, never 2


def test_an_agent_cannot_dismiss(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    done = lk(ws, "dismiss", path.stem, env=clean_env(LOOPKIT_AGENT_SESSION="s1"))
    assert done.returncode == 77 and "an agent cannot" in done.stderr
    assert record(ws, path.stem)["status"] == "open" and (ws / "BLOCKED.md").exists()


def test_a_ghost_says_it_can_be_dismissed_in_status_and_inbox(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    rid = path.stem
    assert f"loopkit dismiss {rid}" not in lk(ws, "status").stdout  # its block stands
    (ws / "BLOCKED.md").unlink()  # by hand, and no supervisor saw it
    status = lk(ws, "status")
    assert status.returncode == 0, status.stderr
    assert f"BLOCKED.md is gone; nobody will answer it: loopkit dismiss {rid}" in status.stdout
    info = json.loads(lk(ws, "status", "--json").stdout)
    assert info["ghosts"] == [
        {"request_id": rid, "prompt": "Which flow?", "dismiss": f"loopkit dismiss {rid}"}
    ]
    inbox = loopkit("inbox", cwd=ws.parent)
    assert f"its BLOCKED.md is gone; nobody will answer it: loopkit dismiss {rid}" in inbox.stdout
    [row] = json.loads(loopkit("inbox", "--json", cwd=ws.parent).stdout)
    assert row["ghost"] is True and row["dismiss"] == f"loopkit dismiss {rid}"
    assert lk(ws, "dismiss", rid).returncode == 0
    assert json.loads(lk(ws, "status", "--json").stdout)["ghosts"] == []
    assert json.loads(loopkit("inbox", "--json", cwd=ws.parent).stdout) == []


def test_a_dismissed_gate_does_not_run(ws: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    command = ("sh", "-c", "touch ran")
    assert gate(ws, *command).returncode == 2
    [path] = files(ws)
    assert lk(ws, "dismiss", path.stem).returncode == 0
    done = gate(ws, *command)
    assert done.returncode == 3 and "dismissed" in done.stderr
    assert not (ws / "ran").exists()


def test_a_waiting_loop_resumes_with_no_decision(ws: Path) -> None:
    (ws / "agent.sh").write_text(
        'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}" >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
    )
    write_config(ws, '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "exit 1"\npause = "0s"\n')
    with Daemon(ws) as daemon:
        state = daemon.wait_state(status="blocked", iteration=3)
        rid = str(state["open_request"])
        done = lk(ws, "dismiss", rid, "--reason", "not needed")
        assert done.returncode == 0, done.stderr
        daemon.wait_state(status="blocked", iteration=6)
    lines = runs_file(ws).read_text().splitlines()
    assert lines[3] == "4|"  # no decision: a dismissal is no answer
    assert record(ws, rid)["status"] == "dismissed"
