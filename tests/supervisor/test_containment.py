"""Nothing a command starts outlives it (SPEC §14), in process: a real Runner, real process
groups, sessions, double forks and — where a writable cgroup v2 exists — real cgroups.

Every command's descendants that left its process group (``setsid``, a double fork, both,
one ignoring SIGTERM, one with a cleared environment) are gone after a stop, after
``iteration_timeout`` and after the leader exits by itself, and none is left as a zombie of
ours. With cgroups and without (the token in the environment, found by /proc)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import prctl
from loopkit.supervisor import cgroup, containment
from loopkit.supervisor import procfs as procs
from loopkit.supervisor.cgroup import Cgroup
from loopkit.supervisor.containment import Containment
from loopkit.supervisor.runner import Finished, Runner
from loopkit.watch.wake import Wake

from helpers import cgroups_or_skip, wait_until

# The leader starts, and writes to `pids` (leader first): a double-forked sleeper (its group),
# a setsid'd and double-forked one, a setsid'd child, a setsid'd one that ignores SIGTERM,
# and — given "bare" — a setsid'd one whose environment is empty (no token to find it by:
# only a cgroup holds it). Then it exits (given "exit") or sleeps.
AGENT = r"""
for word in "$@"; do case $word in bare) bare=1 ;; exit) leave=1 ;; esac; done
a=$(sh -c 'sleep 300 >/dev/null 2>&1 & echo $!')
b=$(setsid sh -c 'sleep 300 >/dev/null 2>&1 & echo $!')
setsid sleep 300 >/dev/null 2>&1 &
c=$!
d=$(setsid sh -c 'trap "" TERM; sleep 300 >/dev/null 2>&1 & echo $!')
e=
[ -n "$bare" ] && e=$(env -i /bin/sh -c 'setsid sleep 300 >/dev/null 2>&1 & echo $!')
echo "$$ $a $b $c $d $e" > pids.tmp && mv pids.tmp pids
[ -n "$leave" ] && exit 0
exec sleep 300
"""

MODES = ["cgroup", "fallback"]

# Goes 0.3 s after a SIGTERM, which it records in `termed`. Given "stray", it writes its pid to
# `stray` once ready; else it starts one in a session of its own, waits for it, and writes
# `ready`.
SLOW = """
import os, signal, subprocess, sys, time
def on_term(signum, frame):
    with open("termed", "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(0.3)
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
if sys.argv[1:] == ["stray"]:
    open("stray.tmp", "w").write(str(os.getpid()))
    os.replace("stray.tmp", "stray")
else:
    subprocess.Popen([sys.executable, "slow.py", "stray"], start_new_session=True)
    while not os.path.exists("stray"):
        time.sleep(0.01)
    open("ready", "w").close()
while True:
    signal.pause()
"""


@pytest.fixture
def subreaper() -> Iterator[None]:
    """As under ``loopkit run``: this process is a child subreaper for the test."""
    with containment.subreaper():
        yield


@pytest.fixture
def contained(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Containment]:
    """A Containment with cgroups ("cgroup", skipped loudly where there are none) or not."""
    mode = getattr(request, "param", "cgroup")
    if mode == "cgroup":
        cgroups_or_skip()
    held = Containment(record=tmp_path / "running.json", name=f"test-{tmp_path.name}",
                       cgroups=mode == "cgroup")  # fmt: skip
    if mode == "cgroup":
        assert held.parent is not None
    yield held
    parent = cgroup.parent()
    # Ours only: a test's two variants share its name, and may run at once on two workers.
    left = sorted(parent.glob(f"{held.prefix}{os.getpid()}.*")) if parent else []
    for folder in left:  # clean up what a failing test left, then fail it
        Cgroup(folder).kill()
        wait_until(lambda f=folder: Cgroup(f).remove(), what=f"{folder} to be removable")
    assert not left, f"cgroups left behind: {left}"


class _Run:
    def __init__(
        self, tmp_path: Path, held: Containment, strays: list[int], kill_grace: float = 0.5
    ) -> None:
        self.strays = strays
        self.cwd = tmp_path
        (tmp_path / "agent.sh").write_text(AGENT)
        self.stop = threading.Event()
        self.wake = Wake()
        self.runner = Runner(wake=self.wake, stop=self.stop, kill_grace=kill_grace,
                             containment=held)  # fmt: skip
        self.record: dict[str, object] = {}
        self.pids: list[int] = []

    def __call__(self, *args: str, timeout: float | None = 30.0) -> Finished:
        return self.runner.run(["/bin/sh", "agent.sh", *args], cwd=str(self.cwd),
                               env=dict(os.environ), timeout=timeout)  # fmt: skip

    def started(self) -> list[int]:
        path = self.cwd / "pids"
        wait_until(path.exists, timeout=20, what="the agent to write its pids")
        self.pids = [int(word) for word in path.read_text().split()]
        self.strays.extend(self.pids)
        return self.pids

    def stop_when_started(self) -> threading.Thread:
        def stopper() -> None:
            self.started()
            self.record = json.loads((self.cwd / "running.json").read_text())
            assert all(procs.running(pid) for pid in self.pids)
            self.stop.set()
            self.wake.set()

        thread = threading.Thread(target=stopper, daemon=True)
        thread.start()
        return thread


def _bare(held: Containment) -> list[str]:
    """With a cgroup, one stray clears its environment too: only the cgroup finds it."""
    return ["bare"] if held.parent is not None else []


def _none_left(pids: list[int]) -> None:
    """Every pid is gone: not running, and not a zombie waiting for us to reap it."""

    def ours(pid: int) -> bool:
        proc = procs.stat(pid)
        return proc is not None and (not proc.gone or proc.ppid == os.getpid())

    wait_until(lambda: not any(ours(p) for p in pids), timeout=10,
               what=f"{[p for p in pids if ours(p)]} of {pids} to be gone and reaped")  # fmt: skip


@pytest.mark.parametrize("contained", MODES, indirect=True)
def test_stop_leaves_nothing(
    tmp_path: Path, contained: Containment, subreaper: None, strays: list[int]
) -> None:
    run = _Run(tmp_path, contained, strays)
    thread = run.stop_when_started()
    result = run(*_bare(contained))
    thread.join(10)
    assert result.ending == "stopped"
    assert result.duration >= 0.5  # one stray ignores SIGTERM: SIGKILL came after kill_grace
    assert len(run.pids) == (6 if contained.parent else 5)
    _none_left(run.pids)
    assert run.record["pid"] == run.record["pgid"] == run.pids[0]
    assert run.record["session"] == contained.session
    assert run.record["command"] == " ".join(["/bin/sh", "agent.sh", *_bare(contained)])
    assert isinstance(run.record["start_time"], int)
    assert (run.record["cgroup"] is not None) == (contained.parent is not None)
    assert not (tmp_path / "running.json").exists()


@pytest.mark.parametrize("contained", MODES, indirect=True)
def test_iteration_timeout_leaves_nothing(
    tmp_path: Path, contained: Containment, subreaper: None, strays: list[int]
) -> None:
    run = _Run(tmp_path, contained, strays)
    result = run(*_bare(contained), timeout=2.0)
    assert result.ending == "timeout"
    run.started()
    _none_left(run.pids)
    assert not (tmp_path / "running.json").exists()


@pytest.mark.parametrize("contained", MODES, indirect=True)
def test_what_the_leader_leaves_when_it_exits_goes_with_it(
    tmp_path: Path, contained: Containment, subreaper: None, strays: list[int]
) -> None:
    run = _Run(tmp_path, contained, strays)
    result = run(*_bare(contained), "exit")
    assert result.ok
    run.started()
    _none_left(run.pids)
    assert not (tmp_path / "running.json").exists()


@pytest.mark.parametrize("contained", MODES, indirect=True)
def test_without_being_a_subreaper_the_strays_are_found_all_the_same(
    tmp_path: Path, contained: Containment, strays: list[int]
) -> None:
    assert not prctl.child_subreaper()
    run = _Run(tmp_path, contained, strays)
    assert run("exit").ok
    _none_left(run.started())


@pytest.mark.parametrize("contained", MODES, indirect=True)
def test_strays_get_sigterm_first_and_the_grace_to_use_it(
    tmp_path: Path, contained: Containment, subreaper: None, strays: list[int]
) -> None:
    # The leader and its setsid'd stray (Python: no shell whose fork-to-exec window could
    # swallow a signal) record the SIGTERM they get, then take 0.3 s to go; the grace is 5 s.
    (tmp_path / "slow.py").write_text(SLOW)
    stop, wake = threading.Event(), Wake()
    runner = Runner(wake=wake, stop=stop, kill_grace=5.0, containment=contained)
    failed: list[BaseException] = []

    def stopper() -> None:
        try:
            wait_until((tmp_path / "ready").exists, timeout=20, what="the stray to start")
        except AssertionError as exc:
            failed.append(exc)
        stop.set()
        wake.set()

    threading.Thread(target=stopper, daemon=True).start()
    result = runner.run([sys.executable, "slow.py"], cwd=str(tmp_path), env=dict(os.environ),
                        timeout=30)  # fmt: skip
    assert not failed, failed
    assert result.ending == "stopped"
    stray = int((tmp_path / "stray").read_text())
    strays.append(stray)
    assert stray in [int(w) for w in (tmp_path / "termed").read_text().split()]
    assert result.duration < 4.0  # they went on SIGTERM: nobody waited for the grace
    _none_left([stray])


def test_the_command_is_in_its_cgroup_before_it_runs_anything(
    tmp_path: Path, contained: Containment
) -> None:
    stop, wake = threading.Event(), Wake()
    runner = Runner(wake=wake, stop=stop, containment=contained)
    for command in ("cat /proc/self/cgroup", ("/bin/cat", "/proc/self/cgroup")):
        result = runner.run(command, cwd=str(tmp_path), env={}, timeout=10)
        assert result.ok, result
        line = next(x for x in result.tail.splitlines() if x.startswith("0::"))
        assert line.rsplit("/", 1)[1].startswith(f"{contained.prefix}{os.getpid()}.")
    assert runner.run("echo $LOOPKIT_AGENT_SESSION", cwd=str(tmp_path), env={},
                      timeout=10).tail.strip() == contained.session  # fmt: skip


def test_a_cgroup_the_command_cannot_join_falls_back_to_the_token(
    tmp_path: Path,
    contained: Containment,
    subreaper: None,
    monkeypatch: pytest.MonkeyPatch,
    strays: list[int],
) -> None:
    wrap = Cgroup.wrap

    def vanishing(self: Cgroup, argv: list[str]) -> list[str]:
        wrapped = wrap(self, argv)
        self.path.rmdir()  # gone before the command's shell gets to join it
        return wrapped

    monkeypatch.setattr(Cgroup, "wrap", vanishing)
    run = _Run(tmp_path, contained, strays)
    assert run("exit").ok
    _none_left(run.started())
    assert contained.parent is None  # the next commands do without
    result = run.runner.run("cat /proc/self/cgroup", cwd=str(tmp_path), env={}, timeout=10)
    assert "loopkit-" not in result.tail


def test_a_cgroup_that_cannot_be_made_falls_back_to_the_token(
    tmp_path: Path, contained: Containment, subreaper: None, strays: list[int]
) -> None:
    contained.parent = tmp_path / "no-such-cgroup"
    run = _Run(tmp_path, contained, strays)
    assert run("exit").ok
    _none_left(run.started())
    assert contained.parent is None


def test_a_command_that_is_not_found_still_is_not_started(
    tmp_path: Path, contained: Containment
) -> None:
    runner = Runner(wake=Wake(), stop=threading.Event(), containment=contained)
    result = runner.run(("loopkit-no-such-program-7e1",), cwd=str(tmp_path), env={}, timeout=5)
    assert result.ending == "not-started"
    assert "loopkit-no-such-program-7e1" in (result.error or "")
    assert not (tmp_path / "running.json").exists()


def test_an_unrelated_process_of_ours_is_not_touched(
    tmp_path: Path, subreaper: None, strays: list[int]
) -> None:
    # A subprocess of the test, in a session of its own, without the token: not the command's.
    held = Containment(record=tmp_path / "running.json", cgroups=False)
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        run = _Run(tmp_path, held, strays)
        assert run("exit").ok
        _none_left(run.started())
        assert procs.running(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait()
