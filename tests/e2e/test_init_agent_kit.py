"""``loopkit init --agent claude|codex|gemini``: the integration kit as a new user meets it,
run twice (the second run changes nothing), in a git repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopkit import config

from helpers import clean_env, loopkit

sys.path.insert(0, str(Path(__file__).parents[1] / "hooks"))
import codexcli
import geminicli

NOTES = {"claude": "CLAUDE.md", "codex": "AGENTS.md", "gemini": "GEMINI.md"}
HOOKS = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json",
         "gemini": ".gemini/settings.json"}  # fmt: skip


def snapshot(ws: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ws)): p.read_bytes()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(ws).parts
    }


def git(ws: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True,
                          check=True, env=clean_env(GIT_AUTHOR_NAME="t", GIT_COMMITTER_NAME="t",
                          GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_EMAIL="t@t"))  # fmt: skip
    return done.stdout


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_init_sets_the_agent_up_once_and_a_second_run_changes_nothing(
    ws: Path, tmp_path: Path, agent: str
) -> None:
    git(ws, "init", "-q")
    (ws / NOTES[agent]).write_text("# Project notes\n\nUse tabs.\n")
    (ws / ".gitignore").write_text("node_modules/")
    (ws / "TASKS.md").write_text("- [x] one\n- [ ] two\n")
    first = loopkit("-C", str(ws), "init", "--agent", agent, "--task-file", "TASKS.md")
    assert first.returncode == 0, first.stderr
    assert "wrote" in first.stdout and "kept" not in first.stdout, first.stdout
    files = snapshot(ws)
    second = loopkit("-C", str(ws), "init", "--agent", agent, "--task-file", "TASKS.md")
    assert second.returncode == 0, second.stderr
    assert all(line.startswith(("kept", "note")) for line in second.stdout.splitlines()), (
        second.stdout
    )
    assert snapshot(ws) == files

    loop = config.load(ws).loop
    assert isinstance(loop.agent, str) and loop.agent.startswith(agent + " ")
    assert loop.task_file == "TASKS.md"
    if agent == "claude":
        # As its SDK runs it: the prompt on stdin, its dialogs answered, a mode that writes.
        stream = ("--input-format stream-json --output-format stream-json --verbose "
                  "--permission-prompt-tool stdio --permission-mode bypassPermissions")  # fmt: skip
        assert loop.agent == f"claude -p {stream}"
        assert loop.resume == f"claude -p --resume {{session_id}} {stream}"
        assert loop.prompt is not None and "TASKS.md" in loop.prompt
        # A root user is told what Claude Code needs for that mode.
        told = "IS_SANDBOX=1" in first.stdout
        refused = os.geteuid() == 0 and os.environ.get("IS_SANDBOX") != "1"
        assert told == refused, first.stdout
    else:
        assert loop.resume is None
    # The notes: the user's text kept, loopkit's section once, with the exact calls.
    notes = (ws / NOTES[agent]).read_text()
    assert notes.startswith("# Project notes\n\nUse tabs.\n\n## When and how to escalate")
    assert notes.count("## When and how to escalate (loopkit)") == 1
    assert "loopkit escalate -q" in notes and "loopkit ask -s" in notes
    assert (ws / ".gitignore").read_text() == "node_modules/\n.loopkit/\nBLOCKED.md\n"
    # The hooks, where the agent reads them.
    home = tmp_path / "home"
    if agent == "codex":
        assert codexcli.handlers(ws, home, "Bash") and codexcli.handlers(ws, home, "apply_patch")
    elif agent == "gemini":
        assert geminicli.timeouts(ws, home, "run_shell_command") == [600.0]
    else:
        hooks = json.loads((ws / HOOKS[agent]).read_text())["hooks"]
        assert "PreToolUse" in hooks
    # done holds once every task is ticked, as /bin/sh runs it.
    done = loop.done
    assert isinstance(done, str)
    assert subprocess.run(done, shell=True, cwd=ws).returncode != 0
    (ws / "TASKS.md").write_text("- [x] one\n- [x] two\n")
    assert subprocess.run(done, shell=True, cwd=ws).returncode == 0
    # An agent's `git add -A` does not stage the block or loopkit's state.
    (ws / "BLOCKED.md").write_text("# Blocked\n")
    (ws / ".loopkit").mkdir(exist_ok=True)
    (ws / ".loopkit" / "events.jsonl").write_text("{}\n")
    git(ws, "add", "-A")
    staged = git(ws, "diff", "--cached", "--name-only").split()
    assert "BLOCKED.md" not in staged and not any(s.startswith(".loopkit/") for s in staged)
    assert "loopkit.toml" in staged and NOTES[agent] in staged


def test_init_adds_missing_lines_to_an_existing_config_and_keeps_the_rest(ws: Path) -> None:
    mine = '# my loop\n[loop] # the loop\nverify = "pytest -q"  # fast\n\n'
    mine += '[escalation]\nchannel = "none"\n'
    (ws / "loopkit.toml").write_text(mine)
    done = loopkit("-C", str(ws), "init", "--agent", "codex")
    assert done.returncode == 0, done.stderr
    text = (ws / "loopkit.toml").read_text()
    assert text.startswith(
        '# my loop\n[loop] # the loop\nagent = "codex exec --json --sandbox workspace-write '
        "--add-dir .git "
    )
    assert text.endswith('verify = "pytest -q"  # fast\n\n[escalation]\nchannel = "none"\n')
    assert config.load(ws).loop.done is None  # no task_file: no done
