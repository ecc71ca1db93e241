"""Nothing left behind (SPEC §14) under the installed ``loopkit``: SIGTERM/SIGINT stop the
agent and everything it started, whichever session it moved to; after a ``kill -9`` of the
supervisor the next ``loopkit run`` stops what was left before iteration 1 and says so; a
recorded pid now naming an unrelated process is left alone; a dial command dies with the
``loopkit escalate`` that runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit.supervisor import cgroup
from loopkit.supervisor import procfs as procs

from helpers import ESCALATE, LOOPKIT, Daemon, clean_env, setup, wait_until

# The agent starts a double-forked sleeper (its group), a setsid'd and double-forked one, a
# setsid'd child and a setsid'd one deaf to SIGTERM — with a cgroup, also one whose
# environment is empty — writes their pids (its own first) to `pids`, and waits forever.
AGENT = r"""
a=$(sh -c 'sleep 300 >/dev/null 2>&1 & echo $!')
b=$(setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo $!')
setsid sleep 300 >/dev/null 2>&1 &
c=$!
d=$(setsid sh -c 'trap "" TERM; sleep 300 >/dev/null 2>&1 & echo $!')
e=
[ -f bare ] && e=$(env -i /bin/sh -c 'setsid sleep 300 >/dev/null 2>&1 & echo $!')
echo "$$ $a $b $c $d $e" > pids.tmp && mv pids.tmp pids
exec sleep 300
"""


def _start(ws: Path, daemon: Daemon, strays: list[int]) -> list[int]:
    wait_until((ws / "pids").exists, timeout=20,
               what=f"the agent to write its pids; stderr: {daemon.stderr()[-300:]}")  # fmt: skip
    pids = [int(word) for word in (ws / "pids").read_text().split()]
    strays.extend(pids)
    # Settled: the leader runs `sleep` (the `mv` that wrote the file is gone).
    comm = Path(f"/proc/{pids[0]}/comm")
    wait_until(lambda: comm.read_text().strip() == "sleep", what="the agent to settle")
    assert all(procs.running(pid) for pid in pids)
    return pids


def _loop(ws: Path) -> None:
    setup(ws, agent=AGENT)
    if cgroup.parent() is not None:  # only a cgroup holds a stray that dropped the token
        (ws / "bare").touch()


def _gone(pids: list[int]) -> None:
    wait_until(lambda: not any(procs.running(p) for p in pids), timeout=10,
               what=f"{[p for p in pids if procs.running(p)]} to be gone")  # fmt: skip


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_everything_the_agent_started(
    ws: Path, strays: list[int], sig: signal.Signals, code: int
) -> None:
    _loop(ws)
    with Daemon(ws) as daemon:
        pids = _start(ws, daemon, strays)
        os.kill(daemon.proc.pid, sig)
        assert daemon.wait() == code
        _gone(pids)
    assert not (ws / ".loopkit" / "running.json").exists()


def test_after_kill_9_the_next_run_stops_what_was_left_before_iteration_1(
    ws: Path, strays: list[int]
) -> None:
    _loop(ws)
    with Daemon(ws) as first:
        pids = _start(ws, first, strays)
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait()
    assert all(procs.running(pid) for pid in pids)  # kill -9 stops nothing by itself
    record = json.loads((ws / ".loopkit" / "running.json").read_text())
    assert record["pid"] == pids[0] and record["command"] == "/bin/sh agent.sh"
    with Daemon(ws, "--max-iterations", "0") as second:
        assert second.wait() == 0, second.stderr()
        line = (
            f"loopkit: warning: stopped {len(pids)} process(es) left by a supervisor "
            f"that did not exit cleanly (pid {first.proc.pid})"
        )
        assert line in second.stderr().splitlines()
    _gone(pids)
    assert not (ws / ".loopkit" / "running.json").exists()
    if record["cgroup"]:
        assert not Path(record["cgroup"]).exists()


def test_the_leftovers_are_stopped_before_iteration_1_runs(ws: Path, strays: list[int]) -> None:
    _loop(ws)
    with Daemon(ws) as first:
        pids = _start(ws, first, strays)
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait()
    (ws / "pids").unlink()
    with Daemon(ws) as second:  # its own agent starts only once the old one is gone
        new = _start(ws, second, strays)
        assert not any(procs.running(pid) for pid in pids)
        err = second.stderr()
        assert err.index("left by a supervisor") < err.index("loopkit: iteration ")
        assert set(new).isdisjoint(pids)
        os.kill(second.proc.pid, signal.SIGTERM)
        assert second.wait() == 143
    _gone(new)


def test_a_recorded_pid_reused_by_an_unrelated_process_is_not_killed(
    ws: Path, strays: list[int]
) -> None:
    setup(ws, agent="exit 0\n")
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    strays.append(bystander.pid)
    try:
        proc = procs.stat(bystander.pid)
        assert proc is not None
        (ws / ".loopkit").mkdir()
        (ws / ".loopkit" / "running.json").write_text(json.dumps({
            "version": 1, "supervisor": 4242, "pid": bystander.pid, "pgid": bystander.pid,
            "start_time": proc.start - 100, "cgroup": None, "session": "ab" * 16,
            "command": "/bin/sh agent.sh", "started_at": "2026-12-01T10:00:00.000Z",
        }))  # fmt: skip
        with Daemon(ws, "--max-iterations", "0") as daemon:
            assert daemon.wait() == 0, daemon.stderr()
            assert "left by a supervisor" not in daemon.stderr()
        assert procs.running(bystander.pid)
        assert not (ws / ".loopkit" / "running.json").exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_a_dial_command_dies_with_its_escalate(ws: Path, strays: list[int]) -> None:
    pidfile = ws.parent / "dial.pid"
    script = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)"
    dial = f'{sys.executable} -c "{script}" {pidfile}'
    env = clean_env(LOOPKIT_HITL_CHANNEL="dial", LOOPKIT_HITL_DIAL_CMD=dial)
    escalate = subprocess.Popen([str(LOOPKIT), "-C", str(ws), *ESCALATE], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
    try:
        wait_until(lambda: pidfile.exists() and pidfile.read_text(), timeout=20,
                   what="the dial command to start")  # fmt: skip
        dialer = int(pidfile.read_text())
        strays.append(dialer)
        assert procs.running(dialer)
        escalate.kill()
        assert escalate.wait(10) == -signal.SIGKILL
        wait_until(lambda: not procs.running(dialer), timeout=5, what="the dial command to die")
    finally:
        escalate.kill()
        escalate.wait()
