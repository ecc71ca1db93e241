"""The next command's process, made ahead (SPEC §20), in process: a real Runner, real
processes and — where a writable cgroup v2 exists — real cgroups (skipped loudly elsewhere:
without one nothing is prepared).

A prepared process waits in its own cgroup; released, it runs the command there, with the
environment, ``$0``, ``$$``, ``$#`` and exit status a fresh process has; one not used is
killed, reaped and its cgroup removed; one that cannot be given the environment is
discarded and the command runs fresh."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit.supervisor import procfs as procs
from loopkit.supervisor.containment import Containment
from loopkit.supervisor.prepared import Prepared, changes, script
from loopkit.supervisor.runner import Runner
from loopkit.watch.wake import Wake

from helpers import cgroups_or_skip, wait_until

# What a command shows of itself: the variables it and its children see, its shell's view.
SHOW = "echo \"$0|$#|$$\"; /usr/bin/env | LC_ALL=C sort; grep '^0::' /proc/$$/cgroup"
DECISION = 'Flow A — it\'s "quoted"\n$(not run) `nor this` and a second line'


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    """A Runner whose commands are contained in cgroups, run from its folder (as the
    supervisor runs from its workspace); what a failing test left is checked and removed."""
    cgroups_or_skip()
    monkeypatch.chdir(tmp_path)
    held = Containment(record=tmp_path / "running.json", name=f"prep-{tmp_path.name}")
    assert held.parent is not None
    made = Runner(wake=Wake(), stop=threading.Event(), kill_grace=1.0, containment=held)
    yield made
    made.close()
    left = sorted(held.parent.glob(f"{held.prefix}{os.getpid()}.*"))
    assert not left, f"cgroups left behind: {left}"
    assert not (tmp_path / "running.json").exists()


def _base(tmp_path: Path) -> dict[str, str]:
    """As a supervisor's commands get it: PWD as the shell it was started from left it."""
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path), "PWD": "/",
            "LOOPKIT_WORKSPACE": str(tmp_path), "LOOPKIT_ITERATION": "4"}  # fmt: skip


def _ready(runner: Runner) -> Prepared:
    ready = runner._ready
    assert ready is not None, "nothing was prepared"
    return ready


def _in_own_cgroup(pid: int) -> str:
    def joined() -> str | None:
        path = procs.cgroup_of(pid)
        return path if path and "/loopkit-prep-" in path else None

    found = wait_until(joined, what=f"{pid} to join its cgroup")
    assert isinstance(found, str)
    return found


def test_a_prepared_process_waits_in_its_cgroup_and_runs_the_command_there(
    tmp_path: Path, runner: Runner
) -> None:
    runner.ahead(str(tmp_path), _base(tmp_path))
    ready = _ready(runner)
    where = _in_own_cgroup(ready.pid)
    assert procs.running(ready.pid)
    record = json.loads((tmp_path / "running.json").read_text())
    assert record["pid"] is None  # no command runs yet
    assert record["also"] == [ready.job.entry()]
    assert record["also"][0]["pid"] == ready.pid and record["also"][0]["cgroup"].endswith(
        where.rsplit("/", 1)[1]
    )
    result = runner.run(SHOW, cwd=str(tmp_path), env=_base(tmp_path), timeout=10)
    assert result.ok, result
    shell = result.tail.splitlines()[0]
    assert shell == f"/bin/sh|0|{ready.pid}"  # the prepared shell ran it, as `sh -c` would
    assert result.tail.splitlines()[-1] == f"0::{where}"
    assert not Path(ready.job.cgroup.path if ready.job.cgroup else "/nonexistent").exists()
    assert not (tmp_path / "running.json").exists()  # nothing prepared after it: no record


@pytest.mark.parametrize(
    ("command", "code"),
    [("exit 3", 3), ("false", 1), ("true", 0), (("/bin/sh", "-c", "exit 5"), 5),
     ("trap 'echo bye' EXIT; exit 4", 4), ("true; return 5", 5), ("trap; echo $?", 0)],
)  # fmt: skip
def test_a_prepared_process_ends_as_a_fresh_one(
    tmp_path: Path, runner: Runner, command: str | tuple[str, ...], code: int
) -> None:
    env = _base(tmp_path)
    fresh = runner.run(command, cwd=str(tmp_path), env=env, timeout=10)
    runner.ahead(str(tmp_path), env)
    pid = _ready(runner).pid
    prepared = runner.run(command, cwd=str(tmp_path), env=env, timeout=10)
    assert (fresh.ending, fresh.exit_code, fresh.tail) == ("exited", code, fresh.tail)
    assert (prepared.ending, prepared.exit_code, prepared.tail) == (
        fresh.ending, fresh.exit_code, fresh.tail)  # fmt: skip
    assert not procs.running(pid)


@pytest.mark.parametrize("shape", ["shell", "argv"])
def test_the_prepared_process_gets_the_decision_env_exactly_as_a_fresh_one(
    tmp_path: Path, runner: Runner, shape: str
) -> None:
    """Prepared with the environment of the block (iteration 4, no decision), released with
    the next run's: LOOPKIT_DECISION (quotes, a newline, `$(…)`), its request, guidance,
    the next iteration — and a secret the agent's preparation never held."""
    ahead = _base(tmp_path)
    env = {**ahead, "LOOPKIT_ITERATION": "5", "LOOPKIT_DECISION": DECISION,
           "LOOPKIT_DECISION_REQUEST": "abc123", "LOOPKIT_GUIDANCE": "note: 'x'\n- y",
           "LOOPKIT_HITL_DIAL_CMD": "secret"}  # fmt: skip
    del env["LOOPKIT_WORKSPACE"]  # gone too
    command: str | tuple[str, ...] = SHOW if shape == "shell" else ("/bin/sh", "-c", SHOW)
    fresh = runner.run(command, cwd=str(tmp_path), env=env, timeout=10)
    runner.ahead(str(tmp_path), ahead)
    pid = _ready(runner).pid
    prepared = runner.run(command, cwd=str(tmp_path), env=env, timeout=10)
    assert fresh.ok and prepared.ok, (fresh, prepared)
    fresh_lines, prepared_lines = fresh.tail.splitlines(), prepared.tail.splitlines()
    assert prepared_lines[0] == f"/bin/sh|0|{pid}"
    # The same variables, the same values: all but the cgroup line and $$ are equal.
    assert prepared_lines[1:-1] == fresh_lines[1:-1]
    assert f"LOOPKIT_DECISION={DECISION.splitlines()[0]}" in fresh_lines
    assert "LOOPKIT_ITERATION=5" in prepared_lines
    assert not any(line.startswith("LOOPKIT_WORKSPACE=") for line in prepared_lines)
    assert f"PWD={tmp_path}" in prepared_lines  # the shell's own, not the stale one handed in


def test_an_argv_command_is_execed_in_the_prepared_process(tmp_path: Path, runner: Runner) -> None:
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    pid = _ready(runner).pid
    where = _in_own_cgroup(pid)
    result = runner.run(["/bin/cat", f"/proc/{pid}/cgroup", f"/proc/{pid}/comm"],
                        cwd=str(tmp_path), env=env, timeout=10)  # fmt: skip
    assert result.ok, result
    assert f"0::{where}" in result.tail.splitlines()
    assert result.tail.splitlines()[-1] == "cat"  # the shell became the program


def test_a_prepared_process_not_used_is_discarded(tmp_path: Path, runner: Runner) -> None:
    runner.ahead(str(tmp_path), _base(tmp_path))
    ready = _ready(runner)
    _in_own_cgroup(ready.pid)
    folder = ready.job.cgroup.path if ready.job.cgroup else None
    assert folder is not None and folder.is_dir()
    runner.close()  # the supervisor ends: a stop, an abort, the last iteration
    assert not procs.running(ready.pid)
    assert procs.stat(ready.pid) is None  # reaped, not a zombie of ours
    assert not folder.exists()
    assert not (tmp_path / "running.json").exists()


def test_a_change_outside_loopkit_variables_runs_fresh_and_discards_the_prepared(
    tmp_path: Path, runner: Runner
) -> None:
    """A variable other than LOOPKIT_* would differ (the shell read its environment at its
    start: PWD, IFS and the like): the command runs in a fresh process."""
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    ready = _ready(runner)
    folder = ready.job.cgroup.path if ready.job.cgroup else None
    result = runner.run("echo $$ $OTHER", cwd=str(tmp_path), env={**env, "OTHER": "x"},
                        timeout=10)  # fmt: skip
    assert result.ok
    pid, other = result.tail.split()
    assert other == "x" and int(pid) != ready.pid
    assert not procs.running(ready.pid) and procs.stat(ready.pid) is None
    assert folder is not None and not folder.exists()


def test_a_program_not_found_is_not_started_and_the_prepared_one_is_kept(
    tmp_path: Path, runner: Runner
) -> None:
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    ready = _ready(runner)
    result = runner.run(["no-such-program-here"], cwd=str(tmp_path), env=env, timeout=10)
    assert result.ending == "not-started"  # as without a prepared process
    assert _ready(runner) is ready and procs.running(ready.pid)
    assert runner.run("true", cwd=str(tmp_path), env=env, timeout=10).ok


def test_a_prepared_process_killed_by_someone_is_made_again(tmp_path: Path, runner: Runner) -> None:
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    first = _ready(runner)
    folder = first.job.cgroup.path if first.job.cgroup else None
    os.kill(first.pid, signal.SIGKILL)
    wait_until(lambda: not procs.running(first.pid), what="the prepared process to die")
    runner.ahead(str(tmp_path), env)
    second = _ready(runner)
    assert second is not first and procs.running(second.pid)
    assert folder is not None and not folder.exists()
    result = runner.run("echo $$", cwd=str(tmp_path), env=env, timeout=10)
    assert int(result.tail) == second.pid


def test_then_prepares_the_next_while_the_command_runs(tmp_path: Path, runner: Runner) -> None:
    """Each command leaves the next one's process ready: the second runs in it, and so on.
    running.json names every running command — as its main entry or, prepared, under
    ``also`` — so it is written every other command."""
    env = _base(tmp_path)
    record = tmp_path / "running.json"

    def read() -> tuple[object, list[object]]:
        data = json.loads(record.read_text())
        return data["pid"], [entry["pid"] for entry in data.get("also", [])]

    first = runner.run("echo $$", cwd=str(tmp_path), env=env, timeout=10, then=env)
    second_ready = _ready(runner)
    first_pid = int(first.tail)
    assert read() == (first_pid, [second_ready.pid])  # written as the first started
    second = runner.run("echo $$", cwd=str(tmp_path), env=env, timeout=10, then=env)
    third_ready = _ready(runner)
    assert int(second.tail) == second_ready.pid != first_pid
    assert third_ready is not second_ready and procs.running(third_ready.pid)
    assert read() == (first_pid, [second_ready.pid])  # it named the second already
    third = runner.run("echo $$", cwd=str(tmp_path), env=env, timeout=10, then=env)
    assert int(third.tail) == third_ready.pid
    assert read() == (third_ready.pid, [_ready(runner).pid])  # the third was not named: written


def test_a_script_cut_short_runs_nothing(tmp_path: Path, runner: Runner) -> None:
    """The release is one brace group: a supervisor killed while writing it (the write end
    closed half-way) runs none of it — the shell reads a syntax error, not a command."""
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    ready = _ready(runner)
    _in_own_cgroup(ready.pid)
    whole = script(["/bin/sh", "-c", "touch ran"], changes(ready.job.env, ready.job.env) or [])
    os.write(ready._release, whole[: whole.index(b"touch") + 5])
    ready._close_release()
    wait_until(lambda: not procs.running(ready.pid), what="the cut-short shell to exit")
    assert not (tmp_path / "ran").exists()
    runner.close()


def test_a_script_cut_short_leaves_no_cgroup(tmp_path: Path, runner: Runner) -> None:
    """The shell that read a cut-short release (a syntax error: it exits 2 there) moves
    back and removes its cgroup on its way out, as on an end-of-file — no supervisor is
    left to do it."""
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    ready = _ready(runner)
    _in_own_cgroup(ready.pid)
    folder = ready.job.cgroup.path if ready.job.cgroup else None
    assert folder is not None
    whole = script(["/bin/sh", "-c", "touch ran"], changes(ready.job.env, ready.job.env) or [])
    os.write(ready._release, whole[: whole.index(b"touch") + 5])
    ready._close_release()
    wait_until(lambda: not procs.running(ready.pid), what="the cut-short shell to exit")
    assert not folder.exists()
    runner.close()


def test_a_non_utf8_loopkit_value_runs_in_the_prepared_process_as_fresh(
    tmp_path: Path, runner: Runner
) -> None:
    """A value holding a byte that is not UTF-8 (as os.environ gives it: surrogateescape)
    reaches the command as those bytes, as a fresh process's environment does."""
    env = {**_base(tmp_path), "LOOPKIT_GUIDANCE": os.fsdecode(b"caf\xe9 \xff")}
    show = "printf '%s' \"$LOOPKIT_GUIDANCE\" | od -An -tx1"
    fresh = runner.run(show, cwd=str(tmp_path), env=env, timeout=10)
    runner.ahead(str(tmp_path), _base(tmp_path))
    ready = _ready(runner)
    prepared = runner.run(show + "; echo $$", cwd=str(tmp_path), env=env, timeout=10)
    assert fresh.ok and prepared.ok, (fresh, prepared)
    assert prepared.tail.splitlines()[:-1] == fresh.tail.splitlines()
    assert "e9 20 ff" in fresh.tail
    assert int(prepared.tail.splitlines()[-1]) == ready.pid


def test_a_release_that_raises_discards_the_prepared_and_runs_fresh(
    tmp_path: Path, runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever goes wrong handing the command over, the prepared process is not left
    waiting: killed, reaped, its cgroup removed — and the command runs in a fresh one."""
    env = _base(tmp_path)
    runner.ahead(str(tmp_path), env)
    ready = _ready(runner)
    folder = ready.job.cgroup.path if ready.job.cgroup else None

    def broken(argv: list[str], lines: list[str]) -> bytes:
        raise ValueError("cannot write it")

    monkeypatch.setattr("loopkit.supervisor.prepared.script", broken)
    result = runner.run("echo $$", cwd=str(tmp_path), env=env, timeout=10)
    assert result.ok, result
    assert int(result.tail) != ready.pid
    assert not procs.running(ready.pid) and procs.stat(ready.pid) is None
    assert folder is not None and not folder.exists()
    assert runner._ready is None


def test_a_failure_to_prepare_the_next_leaves_the_command_supervised(
    tmp_path: Path, runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of file descriptors as the next command's process is made (after this command
    started): the command still runs to its end, supervised; nothing is prepared or left."""
    env = _base(tmp_path)
    real = os.pipe
    calls: list[int] = []

    def pipe() -> tuple[int, int]:
        calls.append(1)
        if len(calls) == 3:  # the command's pipe, the prepared one's output, its release
            raise OSError(24, "Too many open files")
        return real()

    monkeypatch.setattr(os, "pipe", pipe)
    fds = len(os.listdir("/proc/self/fd"))
    result = runner.run("echo $$", cwd=str(tmp_path), env=env, timeout=10, then=env)
    monkeypatch.setattr(os, "pipe", real)
    assert result.ok and result.ending == "exited", result
    assert not procs.running(int(result.tail))
    assert runner._ready is None
    assert len(os.listdir("/proc/self/fd")) == fds  # the first pipe closed
    assert runner.run("true", cwd=str(tmp_path), env=env, timeout=10).ok


def test_blocking_with_an_unrecorded_prepared_process_records_it(
    tmp_path: Path, runner: Runner
) -> None:
    """The second command started in the process the first record named, so the record was
    not written as it made the third's; the loop then blocks: ``ahead`` writes it."""
    env = _base(tmp_path)
    record = tmp_path / "running.json"
    runner.run("true", cwd=str(tmp_path), env=env, timeout=10, then=env)
    runner.run("true", cwd=str(tmp_path), env=env, timeout=10, then=env)
    third = _ready(runner)
    assert third.pid not in [e["pid"] for e in json.loads(record.read_text()).get("also", [])]
    runner.ahead(str(tmp_path), env)
    assert _ready(runner) is third
    data = json.loads(record.read_text())
    assert data["pid"] is None and data["also"] == [third.job.entry()]
