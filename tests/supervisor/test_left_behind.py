"""What a supervisor killed with ``kill -9`` left running is stopped by the next one, in
process: a command started as the Runner starts it, its supervisor "dies" (the command is
never finished), and a new Containment — another token — reads the record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from loopkit.supervisor import cgroup
from loopkit.supervisor import procfs as procs
from loopkit.supervisor.cgroup import Cgroup
from loopkit.supervisor.containment import Containment
from loopkit.supervisor.leftovers import stop_left_behind

from helpers import wait_until

# A leader in its own session, a setsid'd stray, a double-forked one, one deaf to SIGTERM.
AGENT = r"""
a=$(setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo $!')
b=$(sh -c 'sleep 300 >/dev/null 2>&1 & echo $!')
c=$(setsid sh -c 'trap "" TERM; sleep 300 >/dev/null 2>&1 & echo $!')
echo "$$ $a $b $c" > pids.tmp && mv pids.tmp pids
exec sleep 300
"""


def _cgroups() -> bool:
    return cgroup.parent() is not None


def _abandoned(
    tmp_path: Path, held: Containment, strays: list[int]
) -> tuple[subprocess.Popen[bytes], list[int]]:
    """Start AGENT as the Runner would, record it, and never finish it: a dead supervisor."""
    (tmp_path / "agent.sh").write_text(AGENT)
    job = held.prepare(["/bin/sh", "agent.sh"], dict(os.environ))
    proc = subprocess.Popen(job.argv, env=job.env, cwd=tmp_path, start_new_session=True)
    job.started(proc.pid, "/bin/sh agent.sh")
    wait_until((tmp_path / "pids").exists, timeout=20, what="the agent to write its pids")
    pids = [int(word) for word in (tmp_path / "pids").read_text().split()]
    strays.extend(pids)
    # Settled: the leader runs `sleep` (the `mv` that wrote the file is gone).
    comm = Path(f"/proc/{pids[0]}/comm")
    wait_until(lambda: comm.read_text().strip() == "sleep", what="the agent to settle")
    assert all(procs.running(pid) for pid in pids)
    return proc, pids


def _next(held: Containment) -> Containment:
    """The next supervisor's Containment: same record and workspace, a token of its own."""
    return Containment(record=held.record, name=held.name, cgroups=held.parent is not None)


def _gone(pids: list[int]) -> None:
    wait_until(lambda: not any(procs.running(p) for p in pids), timeout=5,
               what=f"{pids} to be gone")  # fmt: skip


@pytest.mark.parametrize("with_cgroup", [True, False], ids=["cgroup", "fallback"])
def test_what_a_killed_supervisor_left_is_stopped(
    tmp_path: Path, strays: list[int], with_cgroup: bool
) -> None:
    if with_cgroup and not _cgroups():
        pytest.skip("NO WRITABLE CGROUP V2 HERE: the cgroup path is untested")
    held = Containment(record=tmp_path / "running.json", name=f"t-{tmp_path.name}",
                       cgroups=with_cgroup)  # fmt: skip
    leader, pids = _abandoned(tmp_path, held, strays)
    record = json.loads((tmp_path / "running.json").read_text())
    stopped = stop_left_behind(_next(held), grace=0.3)
    assert leader.wait(5) == -signal.SIGTERM
    _gone(pids)
    assert stopped.count == len(pids)
    assert stopped.supervisor == os.getpid()
    assert stopped.message() == (
        f"stopped {len(pids)} process(es) left by a supervisor that did not exit cleanly "
        f"(pid {os.getpid()})"
    )
    assert not (tmp_path / "running.json").exists()
    if with_cgroup:
        assert not Path(record["cgroup"]).exists()


def test_the_token_alone_finds_them_when_the_leader_is_gone(
    tmp_path: Path, strays: list[int]
) -> None:
    held = Containment(record=tmp_path / "running.json", cgroups=False)
    leader, pids = _abandoned(tmp_path, held, strays)
    leader.kill()
    leader.wait(5)
    assert stop_left_behind(_next(held), grace=0.3).count == len(pids) - 1
    _gone(pids)


def test_a_recorded_pid_now_naming_another_process_is_left_alone(
    tmp_path: Path, strays: list[int]
) -> None:
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    strays.append(bystander.pid)
    start = procs.stat(bystander.pid)
    assert start is not None
    record = {"version": 1, "supervisor": 999999, "pid": bystander.pid, "pgid": bystander.pid,
              "start_time": start.start - 1, "cgroup": None, "session": "0" * 32}  # fmt: skip
    (tmp_path / "running.json").write_text(json.dumps(record))
    stopped = stop_left_behind(Containment(record=tmp_path / "running.json"), grace=0.3)
    assert stopped.count == 0
    assert procs.running(bystander.pid)
    assert not (tmp_path / "running.json").exists()
    # The same record with the right start time is that group: it is stopped.
    (tmp_path / "running.json").write_text(json.dumps({**record, "start_time": start.start}))
    assert stop_left_behind(Containment(record=tmp_path / "running.json"), grace=0.3).count == 1
    assert bystander.wait(5) == -signal.SIGTERM


@pytest.mark.parametrize(
    "text",
    ["[]", "{", '{"pid": "1", "pgid": true, "session": 7}', '{"pid": 1, "pgid": 1}',
     '{"cgroup": "/sys/fs/cgroup"}', '{"cgroup": "/sys/fs/cgroup/unified"}',
     '{"cgroup": "/tmp/loopkit-x"}'],
)  # fmt: skip
def test_a_hostile_record_stops_nothing_and_is_removed(tmp_path: Path, text: str) -> None:
    (tmp_path / "running.json").write_text(text)
    stopped = stop_left_behind(Containment(record=tmp_path / "running.json"), grace=0.1)
    assert stopped.count == 0
    assert not (tmp_path / "running.json").exists()


def test_a_fifo_in_place_of_the_record_does_not_hang_the_start(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "running.json")
    assert stop_left_behind(Containment(record=tmp_path / "running.json"), grace=0.1).count == 0


def test_a_cgroup_of_this_workspace_left_without_a_record_is_emptied_and_removed(
    tmp_path: Path, strays: list[int]
) -> None:
    parent = cgroup.parent()
    if parent is None:
        pytest.skip("NO WRITABLE CGROUP V2 HERE: the cgroup path is untested")
    held = Containment(record=tmp_path / "running.json", name=f"t-{tmp_path.name}")
    folder = Cgroup.create(parent / f"{held.prefix}1")  # a supervisor of pid 1, long gone
    try:
        sleeper = subprocess.Popen(folder.wrap(["sleep", "300"]), start_new_session=True)
        strays.append(sleeper.pid)
        wait_until(lambda: folder.pids() == [sleeper.pid], what="the sleeper in its cgroup")
        assert stop_left_behind(_next(held), grace=0.3).count == 1
        assert sleeper.wait(5) == -signal.SIGTERM
        assert not folder.path.exists()
    finally:
        folder.kill()
        wait_until(folder.remove, what=f"{folder.path} to be removable")
