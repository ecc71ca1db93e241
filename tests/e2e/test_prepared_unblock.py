"""The next iteration's process is made while the loop is blocked (SPEC §20), under the
installed ``loopkit run`` — with a writable cgroup v2 (skipped loudly elsewhere: without one
nothing is prepared):

- it waits in its own cgroup, recorded in ``running.json`` (``also``), and holds none of the
  channels' secrets, not even in its first environment;
- an answer releases it: the agent runs in that very process, with the decision;
- ``kill -9`` of the blocked supervisor leaves neither it nor its cgroup behind — with no
  next ``loopkit run`` to clean up — and a next run starts as usual."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from loopkit.supervisor import cgroup
from loopkit.supervisor import procfs as procs

from helpers import Daemon, cgroups_or_skip, clean_env, lk, runs_file, setup, wait_until

# Each run logs its pid and decision, then asks (the first run only): the loop blocks.
AGENT = r"""
echo "$$|${LOOPKIT_DECISION:--}" >> "$LOOPKIT_WORKSPACE.runs.txt"
[ -f asked ] && exit 0
touch asked
exec "$LOOPKIT" escalate -q "Which flow?" -c "a choice" -a "nothing yet" \
    --choice "Flow A — the first" --choice "Flow B — the second"
"""
SECRET = "s3cr3t-inbox-token"


def _blocked(ws: Path, daemon: Daemon) -> dict[str, object]:
    """Blocked, and the process for the next iteration prepared: its running.json entry."""
    daemon.wait_state(status="blocked")
    record = ws / ".loopkit" / "running.json"

    def prepared() -> dict[str, object] | None:
        try:
            also = json.loads(record.read_text()).get("also") or []
        except (OSError, ValueError):
            return None
        return also[0] if also else None

    found = wait_until(prepared, what=f"a prepared process; stderr: {daemon.stderr()[-300:]}")
    assert isinstance(found, dict)
    return found


def _loop(ws: Path) -> dict[str, str]:
    from helpers import LOOPKIT

    setup(ws, agent=AGENT, verify="exit 0\n")
    return clean_env(LOOPKIT=str(LOOPKIT), LOOPKIT_INBOX_TOKEN=SECRET)


def test_kill_9_while_blocked_leaves_no_prepared_process_and_no_cgroup(ws: Path) -> None:
    cgroups_or_skip()
    env = _loop(ws)
    with Daemon(ws, env=env) as daemon:
        entry = _blocked(ws, daemon)
        pid, folder = int(str(entry["pid"])), Path(str(entry["cgroup"]))
        wait_until(lambda: procs.cgroup_of(pid) == f"/{folder.name}" or
                   (procs.cgroup_of(pid) or "").endswith(f"/{folder.name}"),
                   what="the prepared process to be in its cgroup")  # fmt: skip
        assert procs.running(pid) and folder.is_dir()
        assert SECRET.encode() not in procs.read(f"/proc/{pid}/environ")
        os.kill(daemon.proc.pid, signal.SIGKILL)  # the supervisor alone
        daemon.proc.wait(10)
        # No next run: the prepared process reads end-of-file, removes its cgroup, exits.
        wait_until(lambda: not procs.running(pid), what=f"prepared process {pid} to exit")
        wait_until(lambda: not folder.exists(), what=f"{folder} to be removed")
    parent = cgroup.parent()
    assert parent is not None
    assert not list(parent.glob(f"loopkit-ws-*-{daemon.proc.pid}.*"))  # none of that run's
    # The next run starts as usual: nothing of the last one is left to stop.
    again = lk(ws, "run", "--exit-on-block", env=env)
    assert again.returncode == 2, again.stderr  # still blocked: the question stands
    assert "left by a supervisor" not in again.stderr


def test_an_answer_runs_the_agent_in_the_prepared_process_with_the_decision(ws: Path) -> None:
    cgroups_or_skip()
    env = _loop(ws)
    with Daemon(ws, "--max-iterations", "2", env=env) as daemon:
        entry = _blocked(ws, daemon)
        pid = int(str(entry["pid"]))
        answered = lk(ws, "unblock", "--reply", "B", env=clean_env())
        assert answered.returncode == 0, answered.stderr
        assert daemon.wait() == 0, daemon.stderr()
    first, second = runs_file(ws).read_text().splitlines()
    assert first.endswith("|-")
    assert second == f"{pid}|flow-b"  # that very process, with the human's decision
    assert not procs.running(pid)
    assert not (ws / ".loopkit" / "running.json").exists()
    parent = cgroup.parent()
    assert parent is not None
    assert not list(parent.glob(f"loopkit-ws-*-{daemon.proc.pid}.*"))
