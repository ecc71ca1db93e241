"""doctor checks the loop itself: programs, task_file, required_env — each with its fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit.setup.doctor import diagnose

from helpers import loopkit


def loop_problems(ws: Path, *, refused: bool = False) -> list[str]:
    """The loop's problems (``refused``: those ``run`` refuses to start on alone)."""
    return [f.text for f in diagnose(ws) if f.topic == "loop" and f.level == "problem"
            and (f.stops_run or not refused)]  # fmt: skip


def test_a_sound_loop_has_no_loop_problems(ws: Path) -> None:
    (ws / "PLAN.md").write_text("- [ ] a task\n")
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "-c", "pass"]\n'
        f'verify = "FOO=1 true && {sys.executable} -m pytest"\n'
        'done = "test -f DONE"\ntask_file = "PLAN.md"\npreflight = ["sh -c true"]\n'
    )
    assert loop_problems(ws) == []


def test_each_loop_problem_is_named_with_its_fix(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STRIPE_KEY_FOR_TEST", raising=False)
    (ws / "loopkit.toml").write_text(
        '[loop]\nagent = "no-such-agent-xyz --go"\nverify = ["./missing-verify.sh"]\n'
        'preflight = ["no-such-probe-abc"]\ntask_file = "PLAN.md"\n'
        'required_env = ["STRIPE_KEY_FOR_TEST"]\n'
    )
    problems = loop_problems(ws)
    assert any("agent: 'no-such-agent-xyz' is not found" in p for p in problems)
    assert any("verify: './missing-verify.sh' is not found" in p for p in problems)
    assert any("preflight: 'no-such-probe-abc'" in p for p in problems)
    assert any("task_file 'PLAN.md' does not exist" in p for p in problems)
    assert any("required_env not set now: STRIPE_KEY_FOR_TEST" in p for p in problems)
    monkeypatch.setenv("STRIPE_KEY_FOR_TEST", "x")
    assert not any("required_env" in p for p in loop_problems(ws))


# What `sh -c` runs without a complaint, shell syntax and prefixes included: doctor (and run)
# must not call any of it "not found".
SHELL_SYNTAX = [
    "! grep -q x PLAN.md",
    "if true; then echo; fi",
    "( cd sub && ls )",
    "{ ls; true; }",
    "VAR=x ls",
    "exec ls",
    "cd sub && ls",
    "time ls" if shutil.which("time") else "exec ls",  # dash's `time` is GNU time's
    "nice ls",
    "env A=1 ls",
    "command -v no-such-tool-x",
    "sh -c 'exit 0'",
    ":",
    "cd sub",
    "[ -f PLAN.md ]",
    "while false; do no-such-tool-x; done",
]


@pytest.mark.parametrize("command", SHELL_SYNTAX)
def test_shell_syntax_is_not_called_not_found(ws: Path, command: str) -> None:
    (ws / "sub").mkdir()
    (ws / "PLAN.md").write_text("- [ ] a task\n")
    (ws / "loopkit.toml").write_text(f"[loop]\nagent = {command!r}\nverify = {command!r}\n")
    ran = subprocess.run(["/bin/sh", "-c", command], cwd=ws, capture_output=True, text=True)
    assert "not found" not in ran.stderr  # sh runs it: nothing is missing
    assert loop_problems(ws, refused=True) == []  # run starts
    # A program that may run and is not there is still named (a loop's body, never run here).
    maybe = [p for p in loop_problems(ws) if "'no-such-tool-x' is not found on PATH" in p]
    assert len(maybe) == (2 if "no-such-tool-x;" in command else 0)  # agent and verify
    assert all("(it runs in a loop)" in p for p in maybe)


def test_a_typo_behind_shell_syntax_is_named(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "loopkit.toml").write_text(
        "[loop]\nagent = \"cd sub && claud-typo-x -p 'Read PROMPT.md'\"\n"
        'done = "! grep -q x y; exec no-such-done-x"\n'
    )
    problems = loop_problems(ws)
    assert any("agent: 'claud-typo-x' is not found on PATH" in p for p in problems)
    assert any("done: 'no-such-done-x' is not found on PATH" in p for p in problems)


def test_run_without_an_agent_exits_78_before_iteration_1(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nblocked_file = "BLOCKED.md"\n')
    done = loopkit("-C", str(ws), "run")
    assert done.returncode == 78 and "no [loop] agent" in done.stderr
    assert not (ws / ".loopkit" / "state.json").exists()  # no iteration began
