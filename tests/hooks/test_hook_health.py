"""``loopkit doctor`` runs each of loopkit's installed Claude Code hooks once: one that cannot
start exits 127, which Claude Code takes for "proceed", so the gate is open."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import LOOPKIT, clean_env, loopkit, write_config


def settings(folder: Path, *commands: str) -> Path:
    path = folder / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    groups = [{"matcher": "Bash", "hooks": [{"type": "command", "command": c}]} for c in commands]
    path.write_text(json.dumps({"hooks": {"PreToolUse": groups}}))
    return path


AGENT = '[loop]\nagent = "true"\n'  # a loop run would start: doctor's exit is the hooks'


def doctor(ws: Path, home: Path, **env: str) -> tuple[int, list[str]]:
    if not (ws / "loopkit.toml").exists():
        write_config(ws, AGENT)
    done = loopkit("-C", str(ws), "doctor", env=clean_env(HOME=str(home), **env))
    return done.returncode, [line for line in done.stdout.splitlines() if " hook: " in line]


def test_a_hook_that_cannot_start_is_a_problem_with_its_fix(ws: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings(ws, "/gone/venv/bin/loopkit hook claude pretooluse", "./audit.sh")
    settings(home, f"{LOOPKIT} -C /nowhere hook claude pretooluse")  # ~/.claude: every project
    code, lines = doctor(ws, home)
    assert code == 1
    assert len(lines) == 2, lines  # loopkit's own only: ./audit.sh is not run
    gone, nowhere = lines
    assert gone.startswith("problem") and "/gone/venv/bin/loopkit" in gone
    assert "exited 127" in gone and "every call goes ahead unchecked" in gone
    assert "run `loopkit hook install claude`" in gone
    assert str(home / ".claude" / "settings.json") in nowhere
    assert "exited 2" in nowhere and "every call is denied" in nowhere


def test_a_bare_loopkit_is_a_problem_even_where_this_path_finds_it(
    ws: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    settings(ws, "loopkit hook claude pretooluse")
    here = f"{LOOPKIT.parent}{os.pathsep}{os.environ['PATH']}"
    code, [line] = doctor(ws, home, PATH=here)  # it runs here
    assert code == 1 and line.startswith("problem")
    assert "without a path" in line and "exits 127" in line
    code, [line] = doctor(ws, home, PATH="/usr/bin:/bin")  # as Claude Code may start it
    assert code == 1 and "exited 127" in line


def test_installed_hooks_run_and_the_probe_asks_nothing(ws: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_config(ws, AGENT + '[escalation]\nchannel = "none"\n')
    assert loopkit("-C", str(ws), "hook", "install", "claude").returncode == 0
    code, lines = doctor(ws, home)
    assert code == 0, lines
    events = [line.split(": ", 2)[1].split()[-1] for line in lines]
    assert events == ["PreToolUse", "Notification", "PermissionRequest", "StopFailure"]
    assert all(line.startswith("ok") and str(LOOPKIT) in line for line in lines)
    assert "a call no rule holds goes ahead" in lines[0] and "--version" in lines[1]
    # A gate that holds every tool: the probe falls back to --version and asks nothing.
    write_config(ws, AGENT + '[escalation]\nchannel = "none"\n[gate]\nrules = ["tool:*", "."]\n')
    code, lines = doctor(ws, home)
    assert code == 0 and "--version answers" in lines[0], lines
    assert not (ws / "requests").exists() and not (ws / "BLOCKED.md").exists()


def test_codex_and_gemini_gate_hooks_are_run_too(ws: Path, tmp_path: Path) -> None:
    """Both CLIs let a call through when the hook cannot start: doctor says so, per agent."""
    home = tmp_path / "home"
    write_config(ws, AGENT + '[escalation]\nchannel = "none"\n')
    for agent in ("codex", "gemini"):
        assert loopkit("-C", str(ws), "hook", "install", agent).returncode == 0
    code, lines = doctor(ws, home)
    assert code == 0, lines
    assert [line.split(": ", 2)[1].split()[-1] for line in lines] == ["PreToolUse", "BeforeTool"]
    assert all(
        line.startswith("ok") and "a call no rule holds goes ahead" in line for line in lines
    )
    hooks = ws / ".gemini" / "settings.json"
    hooks.write_text(hooks.read_text().replace(str(LOOPKIT), "/gone/venv/bin/loopkit"))
    code, lines = doctor(ws, home)
    assert code == 1
    gone = [line for line in lines if "/gone/venv/bin/loopkit" in line]
    assert len(gone) == 1 and gone[0].startswith("problem") and "exited 127" in gone[0]
    assert "run `loopkit hook install gemini`" in gone[0]


def test_doctor_fails_where_gemini_cli_would_not_run_the_hook(ws: Path, tmp_path: Path) -> None:
    """Gemini CLI runs a folder's hooks only in a folder it trusts (SPEC section 23):
    `hook install gemini` adds the folder to its trusted folders, and doctor decides as
    Gemini CLI does — a folder a rule distrusts, or one no rule names, is a problem."""
    home = tmp_path / "home"
    write_config(ws, AGENT + '[escalation]\nchannel = "none"\n')
    assert loopkit("-C", str(ws), "hook", "install", "gemini").returncode == 0
    trusted = Path(os.environ["GEMINI_CLI_TRUSTED_FOLDERS_PATH"])
    assert json.loads(trusted.read_text()) == {str(ws.resolve()): "TRUST_FOLDER"}

    def trust_lines(**env: str) -> tuple[int, list[str]]:
        done = loopkit("-C", str(ws), "doctor", env=clean_env(HOME=str(home), **env))
        return done.returncode, [ln for ln in done.stdout.splitlines() if " trust: " in ln]

    code, (line,) = trust_lines()
    assert code == 0 and line.startswith("ok") and "TRUST_FOLDER" in line
    trusted.write_text(json.dumps({str(ws.resolve()): "DO_NOT_TRUST",
                                   str(ws.parent.resolve()): "TRUST_FOLDER"}))  # fmt: skip
    code, (line,) = trust_lines()
    assert code == 1 and line.startswith("problem") and "exits 55" in line
    trusted.write_text("{}")
    code, (line,) = trust_lines()
    assert code == 1 and line.startswith("problem")
    code, (line,) = trust_lines(GEMINI_CLI_TRUST_WORKSPACE="true")
    assert code == 0 and line.startswith("ok")


def test_doctor_fails_on_a_gemini_line_that_skips_trust(ws: Path, tmp_path: Path) -> None:
    write_config(ws, '[loop]\nagent = "gemini --skip-trust --approval-mode yolo -p go"\n')
    tools = tmp_path / "bin"  # a gemini on PATH: this is about the line, not the install
    tools.mkdir()
    (tools / "gemini").write_text("#!/bin/sh\nexit 0\n")
    (tools / "gemini").chmod(0o755)
    path = f"{tools}{os.pathsep}{os.environ['PATH']}"
    done = loopkit("-C", str(ws), "doctor", env=clean_env(HOME=str(tmp_path / "home"), PATH=path))
    assert done.returncode == 1  # run would start: the hooks are off, which is a problem
    assert any(ln.startswith("problem") and "--skip-trust" in ln and "hooks off" in ln
               for ln in done.stdout.splitlines()), done.stdout  # fmt: skip
