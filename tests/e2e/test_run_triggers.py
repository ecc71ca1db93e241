"""What makes ``loopkit run`` escalate: verify failing three times, an agent that hangs or
cannot start, a missing credential, a dependency down, the agent's own block."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import (
    AGENT,
    LOOPKIT,
    alive,
    clean_env,
    lk,
    loopkit,
    records,
    runs,
    setup,
)


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


def vanishing(ws: Path, name: str) -> str:
    """An agent program there when `run` starts (a missing one is refused with exit 78
    then: tests/e2e/test_run_refuses_to_start.py) and removed by the preflight before each
    turn: the agent that cannot start at run time."""
    (ws / name).write_text("#!/bin/sh\nexit 0\n")
    (ws / name).chmod(0o755)
    return f'agent = ["./{name}"]\npreflight = ["rm -f {name}"]'


def test_an_agent_executable_gone_after_start_is_a_counted_failure(ws: Path) -> None:
    setup(ws, "max_verify_failures = 2\n" + vanishing(ws, "no-such-agent-x"))
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2
    assert "agent could not start" in done.stderr and "no-such-agent-x" in done.stderr
    assert "Traceback" not in done.stderr
    [record] = records(ws)
    assert "No such file or directory" in str(record["attempted"])


def test_an_agent_that_cannot_start_is_named_and_the_prompt_fits_a_phone(ws: Path) -> None:
    task = "Make the checkout page render prices in the customer's own currency and locale " * 2
    setup(ws, 'task_file = "PLAN.md"\n' + vanishing(ws, "no-such-agent-xyz"))
    (ws / "PLAN.md").write_text(f"- [ ] {task}\n")
    assert lk(ws, "run", "--exit-on-block").returncode == 2
    [block] = records(ws)
    prompt = str(block["prompt"])
    assert prompt.startswith("The agent failed 3 times in a row on task")
    assert len(prompt) <= 120
    assert "no-such-agent-xyz" in (ws / "BLOCKED.md").read_text()


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
