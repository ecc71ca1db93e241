"""``loopkit run`` and signals: SIGTERM/SIGINT stop the whole process group, a SIGKILL restart
keeps the counts and sends nothing twice, SIGHUP reloads the config."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from fakeserver import FakeServer
from helpers import AGENT, Daemon, alive, clean_env, runs, setup, wait_until, write_config


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_stops_the_whole_group(ws: Path, sig: signal.Signals, code: int) -> None:
    agent = "sleep 300 &\necho $! > grandchild.pid\necho $$ > child.pid\nwait\n"
    setup(ws, agent=agent)
    with Daemon(ws) as daemon:
        wait_until(
            lambda: all(
                (ws / name).exists() and (ws / name).read_text().strip()
                for name in ("grandchild.pid", "child.pid")
            ),
            what="the agent and its grandchild to start",
        )
        child = int((ws / "child.pid").read_text())
        grandchild = int((ws / "grandchild.pid").read_text())
        assert alive(child) and alive(grandchild)
        os.kill(daemon.proc.pid, sig)
        assert daemon.wait() == code
        assert not alive(child)
        wait_until(lambda: not alive(grandchild), what="the grandchild to be gone")
        assert daemon.state()["status"] == "stopped"


def test_kill_9_and_restart_keeps_counters_and_sends_nothing_twice(
    ws: Path, server: FakeServer
) -> None:
    setup(ws, 'max_verify_failures = 3\n[escalation]\nchannel = "telegram"')
    env = clean_env(
        LOOPKIT_HITL_TELEGRAM_TOKEN="5555:AAFakeTokenForTheRestartTest_abcdef",
        LOOPKIT_HITL_TELEGRAM_CHAT="7",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    with Daemon(ws, env=env) as first:
        first.wait_state(status="blocked", iteration=3)
        server.wait_for("/sendMessage", 1)
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait()
    with Daemon(ws, env=env) as second:
        state = second.wait_state(status="blocked")
        assert state["failures"] == 3 and state["iteration"] == 3
        assert len(server.calls("/sendMessage")) == 1
        (ws / "BLOCKED.md").unlink()
        second.wait_state(status="blocked", iteration=6)
        server.wait_for("/sendMessage", 2)


def test_kill_9_mid_streak_keeps_the_count(ws: Path) -> None:
    agent = (
        AGENT + '[ "$LOOPKIT_ITERATION" = 2 ] && [ ! -f restarted ] && { touch at2; sleep 300; }\n'
    )
    setup(ws, agent=agent)
    with Daemon(ws) as first:
        wait_until(lambda: (ws / "at2").exists())
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait()
    # The orphaned agent of the killed supervisor is its own group: clean it up.
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"agent.sh" in cmd and os.getpgid(pid) != os.getpgid(0):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
    (ws / "restarted").touch()
    with Daemon(ws) as second:
        state = second.wait_state(status="blocked")
        # Iteration 1 failed; 2 was cut off before verify, so it runs again (under its own
        # number: it never finished) and fails, and 3 brings the count to 3.
        assert state["iteration"] == 3 and state["failures"] == 3
        assert [r[0] for r in runs(ws)] == ["1", "2", "2", "3"]


def test_sighup_reloads_at_the_next_iteration(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        agent2 = ws.parent / "agent2.sh"  # beside the workspace: no work of the agent's
        agent2.write_text('echo "$LOOPKIT_ITERATION|reloaded|" >> "$LOOPKIT_WORKSPACE.runs.txt"\n')
        write_config(ws, (ws / "loopkit.toml").read_text().replace("agent.sh", str(agent2)))
        os.kill(daemon.proc.pid, signal.SIGHUP)
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)
    assert [r[1] for r in runs(ws)][3:] == ["reloaded"] * 3


def test_sighup_to_a_channel_that_reaches_nobody_keeps_the_old_config(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        agent2 = ws.parent / "agent2.sh"
        agent2.write_text('echo "$LOOPKIT_ITERATION|reloaded|" >> "$LOOPKIT_WORKSPACE.runs.txt"\n')
        text = (ws / "loopkit.toml").read_text().replace("agent.sh", str(agent2))
        write_config(ws, text + '[escalation]\nchannel = "slack"\n')  # no webhook is set
        os.kill(daemon.proc.pid, signal.SIGHUP)
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)
    assert [r[1] for r in runs(ws)][3:] == [""] * 3  # still the old agent: not reloaded
    assert "config not reloaded: channel slack" in (ws / ".loopkit" / "events.jsonl").read_text()
