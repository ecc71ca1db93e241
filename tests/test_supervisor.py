"""``loopkit run`` end to end: real processes, process groups, signals and inotify."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakeserver import FakeServer
from helpers import LOOPKIT, Daemon, alive, clean_env, loopkit, wait_until, write_config

AGENT = 'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}|${LOOPKIT_TASK-}" >> runs.txt\n'
VERIFY_FAILS = (
    'echo "collected 3 items"\necho "FAILED test_price.py - AssertionError: boom"\nexit 1\n'
)


def setup(ws: Path, extra: str = "", agent: str = AGENT, verify: str = VERIFY_FAILS) -> None:
    (ws / "agent.sh").write_text(agent)
    (ws / "verify.sh").write_text(verify)
    base = [
        'agent = ["/bin/sh", "agent.sh"]',
        'verify = ["/bin/sh", "verify.sh"]',
        'pause = "0s"',
        'iteration_timeout = "30s"',
        'kill_grace = "2s"',
    ]
    overridden = {line.split("=")[0].strip() for line in extra.splitlines() if "=" in line}
    kept = [line for line in base if line.split("=")[0].strip() not in overridden]
    write_config(ws, "[loop]\n" + "\n".join(kept) + "\n" + extra + "\n")


def runs(ws: Path) -> list[list[str]]:
    path = ws / "runs.txt"
    return [line.split("|") for line in path.read_text().splitlines()] if path.exists() else []


def records(ws: Path) -> list[dict[str, object]]:
    found = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    return sorted(found, key=lambda r: (str(r["created_at"]), int(r.get("iteration") or 0)))  # type: ignore[call-overload]


def store(ws: Path) -> RequestStore:
    return RequestStore(Workspace.of(config_mod.load(ws, {})))


def test_escalates_on_the_third_failure(ws: Path) -> None:
    setup(ws, 'task_file = "PLAN.md"')
    (ws / "PLAN.md").write_text("- [x] done one\n- [ ] Round prices\n- [ ] Cart\n")
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    assert len(runs(ws)) == 3
    assert runs(ws)[0][2] == "Round prices"  # LOOPKIT_TASK
    streamed = [line for line in done.stdout.splitlines() if line.startswith("FAILED test_")]
    assert len(streamed) == 3  # child output streams through
    assert "# Blocked" in done.stdout  # the head of BLOCKED.md
    [record] = records(ws)
    assert record["trigger"] == "verify-failures"
    assert [o["value"] for o in record["options"]] == ["retry", "skip", "abort"]  # type: ignore[attr-defined]
    assert [o["label"] for o in record["options"]] == [  # type: ignore[attr-defined]
        "Retry with a hint",
        "Skip the task",
        "Abort the loop",
    ]
    assert "'Round prices'" in str(record["prompt"])
    assert "AssertionError: boom" in str(record["situation"])
    assert "collected 3 items" not in str(record["situation"])  # a signature, not a log
    assert len(record["attempted"]) == 3  # type: ignore[arg-type]
    state = json.loads((ws / ".loopkit" / "state.json").read_text())
    assert state["failures"] == 3 and state["status"] == "blocked"
    log = (ws / ".loopkit" / "logs" / "iteration-1.log").read_text()
    assert "AssertionError: boom" in log


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


def test_hanging_agent_hits_iteration_timeout(ws: Path) -> None:
    agent = "echo $$ > child.pid\nsleep 300\n"
    setup(ws, 'max_verify_failures = 1\niteration_timeout = "0.5s"', agent=agent)
    (ws / "verify.sh").write_text("touch verified\nexit 0\n")
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    assert not (ws / "verified").exists()  # a timed-out turn is not verified
    assert not alive(int((ws / "child.pid").read_text()))
    [record] = records(ws)
    assert "killed after 0.5 s" in str(record["attempted"])


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


def test_a_second_supervisor_names_the_first(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        other = loopkit("-C", str(ws), "run")
        assert other.returncode == 1
        assert f"pid {daemon.proc.pid}" in other.stderr
        status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
        assert status["state"] == "blocked" and status["pid"] == daemon.proc.pid
        assert status["open_request"]["request_id"] == records(ws)[0]["request_id"]
        os.kill(daemon.proc.pid, signal.SIGTERM)
        daemon.wait()
    status = json.loads(loopkit("-C", str(ws), "status", "--json").stdout)
    assert status["state"] == "stopped" and status["pid"] is None


def test_missing_agent_executable_is_a_counted_failure(ws: Path) -> None:
    setup(ws, "max_verify_failures = 2")
    write_config(
        ws,
        (ws / "loopkit.toml").read_text().replace('["/bin/sh", "agent.sh"]', '["no-such-agent-x"]'),
    )
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2
    assert "agent could not start" in done.stderr and "no-such-agent-x" in done.stderr
    assert "Traceback" not in done.stderr
    [record] = records(ws)
    assert "No such file or directory" in str(record["attempted"])


def test_done_condition_finishes(ws: Path) -> None:
    agent = AGENT + '[ "$LOOPKIT_ITERATION" = 2 ] && touch DONE\n'
    setup(ws, 'done = "test -f DONE"', agent=agent, verify="exit 0\n")
    done = loopkit("-C", str(ws), "run")
    assert done.returncode == 0, done.stderr
    assert len(runs(ws)) == 2
    assert json.loads((ws / ".loopkit" / "state.json").read_text())["status"] == "finished"


def test_max_iterations(ws: Path) -> None:
    setup(ws, verify="exit 0\n")
    assert loopkit("-C", str(ws), "run", "--max-iterations", "2").returncode == 0
    assert [r[0] for r in runs(ws)] == ["1", "2"]


def test_required_env_escalates_as_missing_credential(ws: Path) -> None:
    setup(ws, 'required_env = ["LK_TEST_SECRET"]', verify="exit 0\n")
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2
    assert runs(ws) == []
    [record] = records(ws)
    assert record["trigger"] == "missing-credential" and "LK_TEST_SECRET" in str(record["prompt"])
    (ws / "BLOCKED.md").unlink()
    env = clean_env(LK_TEST_SECRET="s3cret")
    assert loopkit("-C", str(ws), "run", "--max-iterations", "1", env=env).returncode == 0
    assert len(runs(ws)) == 1


def test_preflight_failing_three_times_escalates(ws: Path) -> None:
    setup(ws, 'preflight = ["echo try >> tries.txt; echo connection refused; exit 7"]\n'
              'preflight_backoff = "10ms"')  # fmt: skip
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2
    assert (ws / "tries.txt").read_text().count("try") == 3
    assert runs(ws) == []
    [record] = records(ws)
    assert record["trigger"] == "dependency-down"
    assert record["attempted"] == [
        "try 1: exit 7; waited 0.01 s",
        "try 2: exit 7; waited 0.02 s",
        "try 3: exit 7",
    ]
    assert "connection refused" in str(record["situation"])


def test_preflight_recovering_runs_the_agent(ws: Path) -> None:
    command = "echo t >> tries.txt; [ $(wc -l < tries.txt) -ge 2 ]"
    setup(ws, f'preflight = ["{command}"]\npreflight_backoff = "10ms"', verify="exit 0\n")
    assert loopkit("-C", str(ws), "run", "--max-iterations", "1").returncode == 0
    assert len(runs(ws)) == 1


def timeout_setup(ws: Path, action: str) -> None:
    setup(ws, f'task_file = "PLAN.md"\n[escalation]\ntimeout_minutes = 0.004\n'
              f'timeout_action = "{action}"')  # fmt: skip
    (ws / "PLAN.md").write_text("- [ ] first task\n- [ ] second task\n")


def test_timeout_abort_exits_3_and_keeps_the_block(ws: Path) -> None:
    timeout_setup(ws, "abort")
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    assert (ws / "BLOCKED.md").exists()
    [record] = records(ws)
    assert record["status"] == "expired"
    assert record["resolution"]["by"] == "timeout"  # type: ignore[index]
    assert record["resolution"]["action"] == "abort"  # type: ignore[index]


def test_timeout_skip_moves_on_to_the_next_task(ws: Path) -> None:
    timeout_setup(ws, "skip")
    with Daemon(ws, "--max-iterations", "6") as daemon:
        assert daemon.wait() == 0
    state = json.loads((ws / ".loopkit" / "state.json").read_text())
    assert state["skipped_tasks"] == ["first task", "second task"]
    assert [r[2] for r in runs(ws)] == ["first task"] * 3 + ["second task"] * 3
    first, second = records(ws)
    assert first["status"] == second["status"] == "expired"
    assert first["resolution"]["by"] == "timeout"  # type: ignore[index]
    assert all(r[1] == "" for r in runs(ws))  # a timeout is never a human's decision


def test_timeout_retry_continues_on_the_same_task(ws: Path) -> None:
    timeout_setup(ws, "retry")
    with Daemon(ws, "--max-iterations", "6") as daemon:
        assert daemon.wait() == 0
    assert [r[2] for r in runs(ws)] == ["first task"] * 6
    assert [r["status"] for r in records(ws)] == ["expired", "expired"]


def test_timeout_queue_keeps_waiting(ws: Path) -> None:
    timeout_setup(ws, "queue")
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        wait_until(lambda: records(ws)[0].get("timed_out_at"), what="the timeout to pass")
        assert records(ws)[0]["status"] == "open"
        assert (ws / "BLOCKED.md").exists() and len(runs(ws)) == 3
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)


def answer(ws: Path, request_id: str, *, chosen: str | None, text: str) -> None:
    store(ws).resolve(
        request_id,
        {
            "request_id": request_id,
            "chosen_option": chosen,
            "free_text": None if chosen else text,
            "parsed_decision": chosen or text,
            "resolved_at": "2026-12-02T13:00:00Z",
            "by": "ana",
            "via": "cli",
        },
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


def test_agent_raised_block_skips_verify(ws: Path) -> None:
    agent = (
        AGENT + f'"{LOOPKIT}" escalate -q "Which flow?" -c "checkout" -a "read PROMPT.md" '
        '--choice "Flow A" --choice "Flow B"\n'
    )
    setup(ws, agent=agent)
    (ws / "verify.sh").write_text("touch verified\nexit 1\n")
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    assert not (ws / "verified").exists()
    [record] = records(ws)
    assert record["prompt"] == "Which flow?" and record["trigger"] == "agent"


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


def test_sighup_reloads_at_the_next_iteration(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        (ws / "agent2.sh").write_text('echo "$LOOPKIT_ITERATION|reloaded|" >> runs.txt\n')
        write_config(ws, (ws / "loopkit.toml").read_text().replace("agent.sh", "agent2.sh"))
        os.kill(daemon.proc.pid, signal.SIGHUP)
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)
    assert [r[1] for r in runs(ws)][3:] == ["reloaded"] * 3


def test_sighup_to_a_channel_that_reaches_nobody_keeps_the_old_config(ws: Path) -> None:
    setup(ws)
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        (ws / "agent2.sh").write_text('echo "$LOOPKIT_ITERATION|reloaded|" >> runs.txt\n')
        text = (ws / "loopkit.toml").read_text().replace("agent.sh", "agent2.sh")
        write_config(ws, text + '[escalation]\nchannel = "slack"\n')  # no webhook is set
        os.kill(daemon.proc.pid, signal.SIGHUP)
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)
    assert [r[1] for r in runs(ws)][3:] == [""] * 3  # still the old agent: not reloaded
    assert "config not reloaded: channel slack" in (ws / ".loopkit" / "events.jsonl").read_text()


def test_unknown_channel_refuses_to_start(ws: Path) -> None:
    setup(ws)
    done = loopkit("-C", str(ws), "run", env=clean_env(LOOPKIT_HITL_CHANNEL="pigeon"))
    assert done.returncode == 78 and "unknown channel 'pigeon'" in done.stderr


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


def test_an_abort_answer_is_applied_once(ws: Path) -> None:
    setup(ws, "max_verify_failures = 1")
    assert loopkit("-C", str(ws), "run", "--exit-on-block").returncode == 2
    [record] = records(ws)
    done = loopkit(
        "-C", str(ws), "reply", "--request-id", str(record["request_id"]), "--reply", "C"
    )
    assert done.returncode == 0
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3  # the human chose Abort: applied now...
    again = loopkit("-C", str(ws), "run", "--exit-on-block", "--max-iterations", "1")
    # ...and never again: the restart runs an iteration (whose failure blocks anew).
    assert again.returncode == 2, again.stderr
    assert len(runs(ws)) == 2


def test_a_timeout_abort_keeps_the_block_across_a_restart(ws: Path) -> None:
    timeout_setup(ws, "abort")
    with Daemon(ws) as daemon:
        assert daemon.wait() == 3
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        assert len(runs(ws)) == 3 and (ws / "BLOCKED.md").exists()
        # An expiry is final: the answer in the morning is refused, said so, nothing changed.
        late = loopkit("-C", str(ws), "unblock", "--reply", "B")
        assert late.returncode == 4 and "expired" in late.stderr, late.stderr
        assert (ws / "BLOCKED.md").exists()
        # Lifting the block is what resumes the loop, its counters afresh.
        assert loopkit("-C", str(ws), "unblock").returncode == 0
        assert daemon.wait() == 3  # three more failures, a new block, nobody answers it
    assert len(runs(ws)) == 6
    [first, _] = records(ws)
    assert first["status"] == "expired" and first["resolution"]["by"] == "timeout"  # type: ignore[index]
    assert runs(ws)[3][1] == ""  # no decision reached the agent: nobody made one
