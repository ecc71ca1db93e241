"""The gate in Codex's and Gemini CLI's dialects, installed by ``loopkit hook install`` and
run by fakes that read the installed files and judge the output as the real CLIs do."""

from __future__ import annotations

import json
import os
from pathlib import Path

import codexcli
import geminicli
import pytest

from loopkit.hooks import agentconfig

from fakeserver import FakeServer
from helpers import LOOPKIT, clean_env, loopkit, phone_env, write_config

WAITING = "waiting for a human's approval"
SUPERVISED = {"LOOPKIT_AGENT_SESSION": "test-session"}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def install(ws: Path, agent: str) -> None:
    """As `loopkit hook install <agent>` does (in-process: the CLI's own test is below)."""
    assert agentconfig.install(agent, ws, start=[str(LOOPKIT)])


def requests_of(ws: Path) -> list[dict[str, object]]:
    return [json.loads(p.read_text()) for p in sorted((ws / "requests").glob("*.json"))]


def reply(ws: Path, answer: str, *extra: str) -> None:
    (request,) = [r for r in requests_of(ws) if r["status"] == "open"]
    done = loopkit("-C", str(ws), "reply", "--request-id", str(request["request_id"]),
                   "--reply", answer, "--by", "ana", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr


def codex(
    ws: Path, home: Path, tool: str, given: dict[str, object], **env: str
) -> codexcli.Outcome:
    event = codexcli.event(ws, tool, given)
    return codexcli.pretooluse(ws, home, event, codexcli.shell_env(clean_env(**env)))


def gemini(
    ws: Path, home: Path, tool: str, given: dict[str, object], **env: str
) -> tuple[str, str]:
    verdict, reason, _ = geminicli.beforetool(
        ws, home, geminicli.event(ws, tool, given), clean_env(**env)
    )
    return verdict, reason


def test_codex_a_gated_call_is_denied_with_the_reason_until_approved_then_runs_once(
    ws: Path, home: Path
) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    install(ws, "codex")
    push = {"command": "git push --force origin main"}
    first = codex(ws, home, "Bash", push, **SUPERVISED)
    assert first.blocked and WAITING in first.reason and first.errors == []
    (request,) = requests_of(ws)
    assert request["prompt"] == "Approve Codex's `git push --force origin main`?"
    reply(ws, "approve")
    again = codex(ws, home, "Bash", push, **SUPERVISED)
    # Approved: no decision Codex would reject (no bare "allow"), the call runs, once.
    assert not again.blocked and again.errors == [] and again.statuses == ["completed"]
    assert "approved by ana" in again.stdouts[0]
    assert codex(ws, home, "Bash", push, **SUPERVISED).blocked


def test_codex_a_patch_to_a_protected_file_is_gated_and_a_rejection_says_why(
    ws: Path, home: Path
) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    install(ws, "codex")
    patch = "*** Begin Patch\n*** Update File: config/.env\n@@\n-A=1\n+A=2\n*** End Patch\n"
    assert codex(ws, home, "apply_patch", {"command": patch}, **SUPERVISED).blocked
    (request,) = requests_of(ws)
    assert request["prompt"] == "Approve Codex's `apply_patch config/.env`?"
    reply(ws, "no, not the production keys")
    denied = codex(ws, home, "apply_patch", {"command": patch}, **SUPERVISED)
    assert denied.blocked and "not the production keys" in denied.reason


def test_codex_a_patch_run_through_the_shell_is_gated_like_the_tool(ws: Path, home: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    install(ws, "codex")

    def shell_patch(path: str) -> dict[str, str]:
        body = f"*** Begin Patch\n*** Add File: {path}\n+SECRET=1\n*** End Patch"
        return {"command": f"apply_patch <<'EOF'\n{body}\nEOF\n"}

    assert not codex(ws, home, "Bash", shell_patch("notes.txt"), **SUPERVISED).blocked
    assert not (ws / "requests").exists()
    assert codex(ws, home, "Bash", shell_patch(".env.local"), **SUPERVISED).blocked
    (request,) = requests_of(ws)
    assert request["prompt"] == "Approve Codex's `apply_patch .env.local`?"


def test_gemini_a_gated_call_is_denied_with_the_reason_until_approved(ws: Path, home: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    install(ws, "gemini")
    wipe = {"command": "rm -rf build/ dist/"}
    verdict, reason = gemini(ws, home, "run_shell_command", wipe, **SUPERVISED)
    assert verdict == "deny" and WAITING in reason
    (request,) = requests_of(ws)
    assert request["prompt"] == "Approve Gemini CLI's `rm -rf build/ dist/`?"
    reply(ws, "approve")
    assert gemini(ws, home, "run_shell_command", wipe, **SUPERVISED) == ("allow", "")
    assert gemini(ws, home, "run_shell_command", wipe, **SUPERVISED)[0] == "deny"
    secret = {"file_path": str(ws / "id_rsa.pem"), "content": "x"}
    assert gemini(ws, home, "write_file", secret, **SUPERVISED)[0] == "deny"
    prompts = {str(request["prompt"]) for request in requests_of(ws)}
    assert any(p.startswith(f"Approve Gemini CLI's `write_file {ws}") for p in prompts), prompts


def test_calls_no_rule_names_pass_with_no_output(ws: Path, home: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    install(ws, "codex")
    install(ws, "gemini")
    patch = "*** Begin Patch\n*** Add File: src/app.py\n+x = 1\n*** End Patch\n"
    for tool, given in (("Bash", {"command": "pytest -q"}), ("apply_patch", {"command": patch}),
                        ("mcp__github__create_issue", {"title": "a bug"})):  # fmt: skip
        seen = codex(ws, home, tool, given)
        assert (seen.blocked, seen.errors, seen.stdouts) == (False, [], [""]), tool
    for tool, given in (("run_shell_command", {"command": "pytest -q"}),
                        ("write_file", {"file_path": str(ws / "app.py"), "content": "x"}),
                        ("replace", {"file_path": str(ws / "app.py"), "old_string": "a",
                                     "new_string": "b"})):  # fmt: skip
        verdict, _, outputs = geminicli.beforetool(
            ws, home, geminicli.event(ws, tool, given), clean_env()
        )
        assert (verdict, outputs) == ("allow", []), tool
    assert not (ws / "requests").exists()


def test_a_broken_gate_denies_in_both_dialects(ws: Path, home: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n[gate]\nrules = "not a list"\n')
    install(ws, "codex")
    install(ws, "gemini")
    push = {"command": "git push -f"}
    seen = codex(ws, home, "Bash", push)
    assert seen.blocked and "the call is denied" in seen.reason
    verdict, reason = gemini(ws, home, "run_shell_command", push)
    assert verdict == "deny" and "the call is denied" in reason


def test_the_fakes_punish_what_the_real_clis_punish(ws: Path, home: Path) -> None:
    """A deny without a reason, a bare allow, an "ask" run the call in Codex; a timeout read
    as seconds is a blink in Gemini CLI (milliseconds) and lets the call run."""
    (ws / ".codex").mkdir()
    for output in ({"permissionDecision": "deny"}, {"permissionDecision": "allow"},
                   {"permissionDecision": "ask", "permissionDecisionReason": "why"}):  # fmt: skip
        body = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", **output}})
        hooks = {
            "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": f"echo '{body}'"}]}]}
        }
        (ws / ".codex" / "hooks.json").write_text(json.dumps(hooks))
        seen = codex(ws, home, "Bash", {"command": "rm -rf /"})
        assert not seen.blocked and seen.statuses == ["failed"], output
    (ws / ".gemini").mkdir()
    deny = json.dumps({"decision": "deny", "reason": "no"})
    slow = {"type": "command", "command": f"sleep 1; echo '{deny}'", "timeout": 540}
    (ws / ".gemini" / "settings.json").write_text(
        json.dumps({"hooks": {"BeforeTool": [{"hooks": [slow]}]}})
    )
    assert gemini(ws, home, "run_shell_command", {"command": "rm -rf /"})[0] == "allow"


def test_install_is_idempotent_and_keeps_the_users_settings(ws: Path, home: Path) -> None:
    (ws / ".codex").mkdir()
    theirs = {"type": "command", "command": "python3 audit.py", "timeout": 5}
    groups = {"PreToolUse": [{"matcher": "Bash", "hooks": [theirs]}], "Stop": [{"hooks": [theirs]}]}
    (ws / ".codex" / "hooks.json").write_text(json.dumps({"hooks": groups}))
    toml = '# my codex\nmodel = "gpt-5-codex"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    (ws / ".codex" / "config.toml").write_text(toml)
    (ws / ".gemini").mkdir()
    settings = {"theme": "Dracula", "hooks": {"AfterTool": [{"hooks": [theirs]}]}}
    (ws / ".gemini" / "settings.json").write_text(json.dumps(settings))
    for agent in ("codex", "gemini"):
        done = loopkit("-C", str(ws), "hook", "install", agent)
        assert done.returncode == 0 and "added" in done.stdout, done.stderr
    files = [
        ws / ".codex" / "hooks.json",
        Path(os.environ["CODEX_HOME"]) / "config.toml",  # notify: where Codex reads it
        ws / ".gemini" / "settings.json",
    ]
    first = [p.read_bytes() for p in files]
    for agent in ("codex", "gemini"):
        again = loopkit("-C", str(ws), "hook", "install", agent)
        assert again.returncode == 0 and "nothing changed" in again.stdout
    assert [p.read_bytes() for p in files] == first
    codex_hooks = json.loads(files[0].read_text())["hooks"]
    assert codex_hooks["Stop"] == [{"hooks": [theirs]}]
    assert codex_hooks["PreToolUse"][0] == {"matcher": "Bash", "hooks": [theirs]}
    assert (ws / ".codex" / "config.toml").read_text() == toml  # the project's: untouched
    [line] = files[1].read_text().splitlines()
    assert line.startswith("notify = [") and line.endswith('"hook", "codex", "notify"]')
    gem = json.loads(files[2].read_text())
    assert gem["theme"] == "Dracula" and gem["hooks"]["AfterTool"] == [{"hooks": [theirs]}]
    # Gemini gives the hook longer than loopkit waits for an answer ([hooks] wait, 540 s).
    assert geminicli.timeouts(ws, home, "run_shell_command") == [600.0]


def test_another_notify_program_is_kept(ws: Path) -> None:
    config = Path(os.environ["CODEX_HOME"]) / "config.toml"  # where Codex reads notify
    config.parent.mkdir()
    config.write_text('notify = ["terminal-notifier"]\n')
    done = loopkit("-C", str(ws), "hook", "install", "codex")
    assert done.returncode == 0 and "kept notify" in done.stdout
    assert config.read_text() == 'notify = ["terminal-notifier"]\n'
    assert not (ws / ".codex" / "config.toml").exists()  # a project's notify is never read


def test_codex_notify_tells_the_phone_of_a_finished_turn_as_codex_runs_it(
    ws: Path, server: FakeServer
) -> None:
    install(ws, "codex")
    env = phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    payload = {"type": "agent-turn-complete", "thread-id": "t1", "turn-id": "1", "cwd": str(ws),
               "input-messages": ["fix it"],
               "last-assistant-message": "Done.\nAll green."}  # fmt: skip
    assert codexcli.notify(ws, payload, env).wait(30) == 0
    (sent,) = server.calls("/sendMessage")
    text = sent.body["text"]
    assert text.startswith("[loopkit] Codex in ") and text.endswith(": finished its turn: Done.")
    # Once per session per 10 minutes; not under `loopkit run`; never a failure.
    assert codexcli.notify(ws, {**payload, "turn-id": "2"}, env).wait(30) == 0
    inside = {**env, "LOOPKIT_AGENT_SESSION": "x"}
    assert codexcli.notify(ws, {**payload, "thread-id": "t2"}, inside).wait(30) == 0
    odd = loopkit("-C", str(ws), "hook", "codex", "notify", "not json", env=env)
    assert odd.returncode == 0 and "ignored" in odd.stderr
    assert len(server.calls("/sendMessage")) == 1


@pytest.mark.parametrize(
    ("words", "module", "tool", "given"),
    [
        (("hook", "codex", "pretooluse"), "loopkit.hooks.codex", "Bash", {"command": "pytest -q"}),
        (("hook", "gemini", "beforetool"), "loopkit.hooks.gemini", "run_shell_command",
         {"command": "pytest -q"}),
    ],
)  # fmt: skip
def test_the_no_match_path_imports_almost_nothing(
    ws: Path, words: tuple[str, ...], module: str, tool: str, given: dict[str, object]
) -> None:
    """Like Claude Code's hook (benchmark row (f)): it runs before every tool call."""
    import subprocess
    import sys

    write_config(ws, '[escalation]\nchannel = "none"\n')
    call = {"session_id": "s", "cwd": str(ws), "tool_name": tool, "tool_input": given}
    for _ in range(2):  # the first call loads loopkit.toml; every later one is this one
        done = subprocess.run(
            [sys.executable, "-X", "importtime", str(LOOPKIT), *words],
            input=json.dumps(call, separators=(",", ":")).encode(),
            cwd=ws, capture_output=True, timeout=30, env=clean_env(),
        )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b"", done.stderr
    imported = {
        line.split("|")[-1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert not imported & {"click", "pathlib", "tomllib", "json", "loopkit.config"}
    assert {name for name in imported if name.startswith("loopkit")} == {
        "loopkit", "loopkit.main", "loopkit.hooks", "loopkit.discover", "loopkit.hooks.rules",
        "loopkit.hooks.pretooluse", "loopkit.hooks.gatestamp", module, "loopkit.cli",
        "loopkit.hooks.guard", "loopkit.hooks.commandline", "loopkit.wrappers",  # own files
        "loopkit.hooks.shell",
        "loopkit.cli.commandtable",
    }  # fmt: skip


def test_the_fast_path_never_waves_through_a_gated_call_of_either_dialect(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopkit.hooks.codex import CODEX
    from loopkit.hooks.gemini import GEMINI
    from loopkit.hooks.pretooluse import _surely_ungated

    monkeypatch.chdir(ws)
    monkeypatch.delenv("LOOPKIT_WORKSPACE", raising=False)
    for dialect, tool, given in (
        (CODEX, "Bash", {"command": "git push -f"}),
        (CODEX, "apply_patch", {"command": "*** Add File: db/migrations/1.sql"}),
        (GEMINI, "run_shell_command", {"command": "terraform destroy"}),
        (GEMINI, "write_file", {"file_path": "prod.key", "content": ""}),
        (GEMINI, "replace", {"file_path": ".env.local", "old_string": "a", "new_string": "b"}),
    ):
        call = {"session_id": "s", "cwd": str(ws), "tool_name": tool, "tool_input": given}
        raw = json.dumps(call, separators=(",", ":")).encode()
        assert not _surely_ungated(raw, None, dialect), (tool, given)
    quiet = {"session_id": "s", "cwd": str(ws), "tool_name": "run_shell_command",
             "tool_input": {"command": "ls"}}  # fmt: skip
    assert _surely_ungated(json.dumps(quiet, separators=(",", ":")).encode(), None, GEMINI)


CODEX_AGENT = """\
import json, os, subprocess, sys
sys.path.insert(0, {fakes!r})
import codexcli
root = __import__("pathlib").Path.cwd()
call = codexcli.event(root, "Bash", {{"command": "git push --force origin main"}})
seen = codexcli.pretooluse(root, root / "home", call, codexcli.shell_env(dict(os.environ)))
assert not seen.errors, seen.errors  # an output Codex would reject runs the call: never that
if not seen.blocked:
    with open("ran.txt", "a") as ran:
        ran.write("git push --force origin main\\n")
with open("answers.txt", "a") as log:
    log.write(json.dumps([seen.blocked, seen.reason]) + "\\n")
"""


def test_under_run_a_codex_call_waits_for_the_approval_then_runs_once(ws: Path) -> None:
    """A fake Codex agent under `loopkit run`: the gated call never runs before the human
    approves, then runs exactly once."""
    import sys

    (ws / "agent.py").write_text(CODEX_AGENT.format(fakes=str(Path(__file__).parent)))
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n'
        '[escalation]\nchannel = "none"\n',
    )
    install(ws, "codex")
    first = loopkit("-C", str(ws), "run", "--exit-on-block", "--max-iterations", "3")
    assert first.returncode == 2, first.stderr
    assert not (ws / "ran.txt").exists()
    [(blocked, reason)] = [
        json.loads(line) for line in (ws / "answers.txt").read_text().splitlines()
    ]
    assert blocked and reason.startswith(WAITING)
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    again = loopkit("-C", str(ws), "run", "--exit-on-block", "--max-iterations", "2")
    assert again.returncode == 2, again.stderr  # the iteration after asks again, and blocks
    assert (ws / "ran.txt").read_text().splitlines() == ["git push --force origin main"]
