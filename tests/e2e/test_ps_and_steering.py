"""``loopkit ps`` over several loops, and steering one from the command line (SPEC §22):
pause lets the running iteration finish and starts no next one, resume goes on, a note
reaches exactly the next agent run, stop ends the supervisor as SIGTERM does."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

from loopkit import loops

from helpers import (
    AGENT,
    GATED_AGENT,
    Daemon,
    clean_env,
    gated_runs,
    loopkit,
    open_gate,
    runs_file,
    setup,
    wait_until,
)


def _ps() -> dict[str, dict[str, object]]:
    done = loopkit("ps", "--json", env=clean_env())
    assert done.returncode == 0, done.stderr
    return {row["repo"]: row for row in json.loads(done.stdout)}


def _pending(repo: str) -> int:
    """The notes waiting, as `ps` reads them (in process: the CLI's wiring is tested above)."""
    return next(one.guidance_pending for one in loops.loops() if one.repo == repo)


def _recorded(ws: Path) -> list[int]:
    """The process groups ``running.json`` names: the running command's, and under ``also``
    the one prepared for the next (none while it is not written)."""
    try:
        record = json.loads((ws / ".loopkit" / "running.json").read_text())
    except FileNotFoundError:
        return []
    named = [record.get("pid"), *(one.get("pid") for one in record.get("also", []))]
    return [int(pid) for pid in named if pid]


def _folder(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


def test_ps_shows_blocked_paused_finished_and_dead_loops(tmp_path: Path) -> None:
    blocked, paused, finished, dead = (
        _folder(tmp_path, name) for name in ("blocked", "paused", "finished", "dead")
    )
    setup(blocked, "max_verify_failures = 1")
    assert loopkit("-C", str(blocked), "run", "--exit-on-block").returncode == 2
    setup(finished, 'done = ["true"]', verify="exit 0\n")
    assert loopkit("-C", str(finished), "run").returncode == 0
    setup(paused)
    assert loopkit("-C", str(paused), "pause").returncode == 0
    setup(dead, agent=AGENT + "exec sleep 60\n")
    with Daemon(paused) as held, Daemon(dead) as doomed:
        held.wait_state(status="paused")
        doomed.wait_state(status="running", iteration=1)
        wait_until(runs_file(dead).exists, what="the doomed loop's agent to start")
        # running.json names the agent once its start is recorded — a moment after it runs
        # (or already, under `also`, as the process prepared for it): wait for that.
        wait_until(lambda: _recorded(dead), what="running.json to name the agent")
        try:
            os.kill(doomed.proc.pid, signal.SIGKILL)
            doomed.wait()
            rows = _ps()
        finally:  # the agent a SIGKILLed supervisor leaves behind (SPEC §14)
            for pid in _recorded(dead):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
        assert {name: row["state"] for name, row in rows.items()} == {
            "blocked": "blocked",
            "paused": "paused",
            "finished": "finished",
            "dead": "dead",
        }
        assert rows["blocked"]["question"] and rows["blocked"]["request_id"]
        assert rows["blocked"]["last_verify"]["ok"] is False  # type: ignore[index]
        assert rows["finished"]["last_verify"]["ok"] is True  # type: ignore[index]
        assert rows["paused"]["paused_by"].startswith("pause by ")  # type: ignore[union-attr]
        assert rows["paused"]["pid"] == held.proc.pid and rows["dead"]["pid"] is None
        assert rows["paused"]["question"] is None  # paused is not a block
        table = loopkit("ps", env=clean_env()).stdout
        assert "paused" in table and "dead" in table and "Q: " in table


def test_pause_note_resume_and_stop(ws: Path) -> None:
    setup(ws, agent=GATED_AGENT, verify="exit 0\n")
    os.mkfifo(ws / "gate")
    with Daemon(ws) as daemon:
        wait_until(lambda: gated_runs(ws) == ["1|"], what="iteration 1")
        running = loopkit("-C", str(ws), "resume")  # nothing to resume: said, not ordered
        assert running.returncode == 0 and "ws is not paused (running): nothing to resume" in (
            running.stdout
        )
        assert loopkit("-C", str(ws), "pause").returncode == 0
        twice = loopkit("-C", str(ws), "pause")
        assert twice.returncode == 0 and "ws is paused already (pause by " in twice.stdout
        assert loopkit("-C", str(ws), "note", "use", "the staging database").returncode == 0
        assert loopkit("-C", str(ws), "note", "and keep it short").returncode == 0
        assert _pending("ws") == 2
        open_gate(ws)  # the running iteration finishes…
        daemon.wait_state(status="paused", iteration=1)  # …and no next one starts
        assert gated_runs(ws) == ["1|"]
        status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
        assert (status["state"], status["blocked"]) == ("paused", False)
        assert loopkit("-C", str(ws), "resume").returncode == 0
        again = loopkit("-C", str(ws), "resume")
        assert again.returncode == 0 and "nothing to resume" in again.stdout
        # (the two notes are two lines of LOOPKIT_GUIDANCE, so two lines in runs.txt)
        wait_until(lambda: len(gated_runs(ws)) == 3, what="iteration 2 after resume")
        open_gate(ws)
        wait_until(lambda: len(gated_runs(ws)) == 4, what="iteration 3")
        # The notes reached exactly the next agent run, oldest first, once.
        assert gated_runs(ws) == ["1|", "2|use the staging database", "and keep it short", "3|"]
        assert _pending("ws") == 0
        stopped = loopkit("-C", str(ws), "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert daemon.wait() == 143
    events = [
        json.loads(line) for line in (ws / ".loopkit" / "events.jsonl").read_text().splitlines()
    ]
    given = [e for e in events if e["event"].startswith("steer_") and e["event"].endswith("_given")]
    assert [e["event"] for e in given] == ["steer_pause_given", "steer_resume_given",
                                          "steer_stop_given"]  # fmt: skip
    assert all(e["via"] == "cli" and e["by"] and e["at"] for e in given)
    assert {"steer_pause", "steer_resume", "steer_stop"} <= {e["event"] for e in events}
    # A stop with no supervisor running says so, and exits 1.
    assert loopkit("-C", str(ws), "stop").returncode == 1
    # The stop was for that supervisor: the next one runs (it is history, not an order).
    with Daemon(ws) as again:
        wait_until(lambda: len(gated_runs(ws)) == 5, what="the next supervisor's first iteration")
        assert again.proc.poll() is None and again.state()["status"] == "running"


def test_an_unknown_loop_is_named_with_the_list(ws: Path) -> None:
    plain = ws.parent / "plain"
    plain.mkdir()
    refused = loopkit("-C", str(plain), "pause")  # no workspace here: nothing is written
    assert refused.returncode == 66 and "no loopkit workspace" in refused.stderr
    assert not (plain / ".loopkit").exists()
    setup(ws)
    assert loopkit("-C", str(ws), "pause").returncode == 0  # registers nothing by itself
    done = loopkit("pause", "nosuchrepo", env=clean_env())
    assert done.returncode == 66
    assert "no loop named 'nosuchrepo'" in done.stderr and "loopkit ps" in done.stderr


def test_stop_of_a_dead_loop_ends_what_its_agent_left_running(ws: Path) -> None:
    """SPEC §26: a supervisor killed with SIGKILL leaves its agent running; `stop` of that
    dead loop ends it (its recorded process group and cgroup), and the loop is stopped."""
    setup(ws, agent=AGENT + "sleep 600 &\nexec sleep 600\n")
    with Daemon(ws) as doomed:
        wait_until(runs_file(ws).exists, what="the agent to start")
        wait_until(lambda: _recorded(ws), what="running.json to name the agent")
        [agent] = _recorded(ws)[:1]
        os.kill(doomed.proc.pid, signal.SIGKILL)
        doomed.wait()
    try:
        assert _ps()["ws"]["state"] == "dead"
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        group = [pid for pid in pids if _pgid(pid) == agent]
        assert agent in group and len(group) >= 2  # the agent and the child it left
        done = loopkit("-C", str(ws), "stop")
        assert done.returncode == 0, done.stderr
        assert "ws: its supervisor was gone (dead); stopped" in done.stdout
        assert "process(es) its agent left running; it is stopped now" in done.stdout
        assert not any(_alive(pid) for pid in group)
        assert _ps()["ws"]["state"] == "stopped"
        again = loopkit("-C", str(ws), "stop")  # nothing is left: as for any stopped loop
        assert again.returncode == 1 and "is not running (stopped): nothing to stop" in again.stdout
    finally:
        for pid in _recorded(ws):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    events = (ws / ".loopkit" / "events.jsonl").read_text()
    assert '"event": "steer_stop_given"' in events and "its supervisor was gone" in events


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
