""" "Allow always here" (SPEC §30): a gate's question offers it; chosen, a rule bound to the
workspace and the exact command (or the files) goes into ``.loopkit/allow.toml``; the
identical call passes next time with a ``gate_rule_used`` event, and nothing else does — in
the Claude, Codex and Gemini gates alike; the agent cannot write the file."""

from __future__ import annotations

import json
from pathlib import Path

import codexcli
import geminicli
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from loopkit.audit.chain import Trail, verify
from loopkit.escalation import allow
from loopkit.hooks import agentconfig

from helpers import LOOPKIT, clean_env, loopkit, write_config

SUPERVISED = {"LOOPKIT_AGENT_SESSION": "test-session"}
WAITING = "waiting for a human's approval"


def claude(ws: Path, tool: str, given: dict[str, object], cwd: Path | None = None) -> dict:
    """What Claude Code's PreToolUse hook answers for the call (under ``loopkit run``)."""
    call = {"session_id": "s", "cwd": str(cwd or ws), "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": given}  # fmt: skip
    done = loopkit("hook", "claude", "pretooluse", input=json.dumps(call), cwd=cwd or ws,
                   env=clean_env(**SUPERVISED))  # fmt: skip
    assert done.returncode == 0, done.stderr
    if not done.stdout.strip():
        return {"decision": "none"}
    out = json.loads(done.stdout)["hookSpecificOutput"]
    return {"decision": out["permissionDecision"], "reason": out["permissionDecisionReason"]}


def open_request(ws: Path) -> dict:
    found = [json.loads(p.read_text()) for p in sorted((ws / "requests").glob("*.json"))]
    (request,) = [r for r in found if r["status"] == "open"]
    return request


def answer_open(ws: Path, reply: str) -> None:
    request = open_request(ws)
    done = loopkit("-C", str(ws), "reply", "--request-id", request["request_id"], "--reply",
                   reply, "--by", "ana")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (ws / "BLOCKED.md").unlink(missing_ok=True)


def events(ws: Path, name: str) -> list[dict]:
    path = ws / ".loopkit" / "events.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e for e in map(json.loads, lines) if e.get("event") == name]


@pytest.fixture
def gated(ws: Path) -> Path:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    return ws


def test_allow_always_lets_the_identical_call_through_and_names_the_rule(gated: Path) -> None:
    ws = gated
    command = {"command": "rm -rf build/cache"}
    first = claude(ws, "Bash", command)
    assert first["decision"] == "deny" and WAITING in first["reason"]
    request = open_request(ws)
    assert [o["label"] for o in request["options"]] == ["Approve", "Reject", "Allow always here"]
    answer_open(ws, "Allow always here")
    (rule,) = allow.load(ws)
    assert rule.command == "rm -rf build/cache" and rule.folder == "." and rule.by == "ana"
    listed = loopkit("-C", str(ws), "rules")
    assert listed.stdout.startswith("1. `rm -rf build/cache`"), listed.stdout
    for _ in range(2):  # not single use: every identical call, from now on
        again = claude(ws, "Bash", command)
        assert again["decision"] == "allow" and "rule 1" in again["reason"], again
    used = events(ws, "gate_rule_used")
    assert len(used) == 2 and used[0]["rule"] == 1 and used[0]["request_id"] == rule.request_id
    audit = Trail(ws / ".loopkit")
    assert verify(audit).ok
    kinds = [json.loads(line)["event"] for line in audit.path.read_text().splitlines()]
    assert "gate_rule_added" in kinds and kinds.count("gate_rule_used") == 2
    # removed: asked again
    assert loopkit("-C", str(ws), "rules", "rm", "1").returncode == 0
    assert allow.load(ws) == []
    assert claude(ws, "Bash", command)["decision"] == "deny"
    assert loopkit("-C", str(ws), "rules", "rm", "1").returncode == 65


def _near(command: str, change: int, where: int, text: str) -> str:
    """A command one small change away from ``command``."""
    at = where % (len(command) + 1)
    if change == 0:
        return command[:at] + text + command[at:]
    if change == 1 and command:
        return command[: min(at, len(command) - 1)] + command[min(at, len(command) - 1) + 1 :]
    if change == 2:
        return command + " " + text
    return command[:at] + " " + command[at:]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    change=st.integers(min_value=0, max_value=3),
    where=st.integers(min_value=0, max_value=200),
    text=st.text(alphabet="abc/.-*;&|$ '\"", min_size=1, max_size=3),
)
def test_a_rule_passes_the_exact_command_and_nothing_near_it(
    tmp_path_factory: pytest.TempPathFactory, change: int, where: int, text: str
) -> None:
    """A near-identical command — a character added, dropped, a word appended, a blank
    moved — needs a human again (the rule binds the exact text and folder)."""
    ws = tmp_path_factory.mktemp("ws")
    command = "git push --force origin main"
    near = _near(command, change, where, text)
    assume(near != command)
    need = allow.wanted(str(ws), str(ws), [command], [])
    assert need is not None
    rule = allow.Rule(workspace=str(ws), folder=need.folder, command=command,
                      command_sha256=need.command_sha256)  # fmt: skip
    assert rule.lets(str(ws), need)
    for other in (
        allow.wanted(str(ws), str(ws), [near], []),
        allow.wanted(str(ws), str(ws / "sub"), [command], []),  # another folder
    ):
        assert other is not None and not rule.lets(str(ws), other), near
    elsewhere = tmp_path_factory.mktemp("other")
    assert not rule.lets(
        str(elsewhere), allow.wanted(str(elsewhere), str(elsewhere), [command], [])
    )


def test_a_near_identical_call_is_asked_again_end_to_end(gated: Path) -> None:
    ws = gated
    claude(ws, "Bash", {"command": "rm -rf build"})
    answer_open(ws, "C")
    assert claude(ws, "Bash", {"command": "rm -rf build"})["decision"] == "allow"
    for near in ("rm -rf build ", "rm -rf build/", "rm -rf buil", "rm -rf build; rm -rf /"):
        assert claude(ws, "Bash", {"command": near})["decision"] == "deny", near
        answer_open(ws, "reject")


def test_a_file_tools_rule_holds_the_file_and_not_its_neighbours(gated: Path) -> None:
    ws = gated
    first = claude(ws, "Write", {"file_path": str(ws / ".env.local"), "content": "A=1"})
    assert first["decision"] == "deny"
    answer_open(ws, "allow always")
    (rule,) = allow.load(ws)
    assert rule.files == (".env.local",)
    # any content, any file tool: that file
    assert (
        claude(ws, "Write", {"file_path": str(ws / ".env.local"), "content": "A=2"})["decision"]
        == "allow"
    )
    assert claude(ws, "Edit", {"file_path": str(ws / ".env.local"), "old_string": "A",
                               "new_string": "B"})["decision"] == "allow"  # fmt: skip
    assert (
        claude(ws, "Write", {"file_path": str(ws / ".env.prod"), "content": "A=1"})["decision"]
        == "deny"
    )


def test_a_gate_question_about_loopkits_own_files_offers_no_rule_and_none_passes_it(
    gated: Path,
) -> None:
    ws = gated
    (ws / ".loopkit").mkdir(exist_ok=True)
    target = {"file_path": str(ws / ".loopkit" / "allow.toml"), "content": "[[allow]]\n"}
    assert claude(ws, "Write", target)["decision"] == "deny"
    request = open_request(ws)
    assert "always" not in [o["value"] for o in request["options"]]
    # a rule for that very file, written by hand, still lets nothing of loopkit's through
    allow.add(ws, allow.Rule(workspace=str(ws.resolve()), files=(".loopkit/allow.toml",)))
    answer_open(ws, "reject")
    assert claude(ws, "Write", target)["decision"] == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "echo '[[allow]]' >> .loopkit/allow.toml",
        "tee -a .loopkit/allow.toml < rules",
        "cp mine.toml .loopkit/allow.toml",
        "sed -i 's/x/y/' .loopkit/allow.toml",
        "mv evil .loopkit/allow.toml",
        "cd .loopkit && printf x > allow.toml",
    ],
)
def test_the_agent_cannot_write_allow_toml_by_the_shell(gated: Path, command: str) -> None:
    assert claude(gated, "Bash", {"command": command})["decision"] == "deny"
    assert "always" not in [o["value"] for o in open_request(gated)["options"]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def test_codex_and_gemini_honour_the_same_rules(gated: Path, home: Path) -> None:
    ws = gated
    assert agentconfig.install("codex", ws, start=[str(LOOPKIT)])
    assert agentconfig.install("gemini", ws, start=[str(LOOPKIT)])
    claude(ws, "Bash", {"command": "kubectl delete pod web-1"})
    answer_open(ws, "Allow always here")
    env = clean_env(**SUPERVISED)
    codex = codexcli.pretooluse(
        ws, home, codexcli.event(ws, "Bash", {"command": "kubectl delete pod web-1"}),
        codexcli.shell_env(env),
    )  # fmt: skip
    assert not codex.blocked and codex.errors == [] and "rule 1" in codex.stdouts[0]
    verdict, reason, _ = geminicli.beforetool(
        ws, home, geminicli.event(ws, "run_shell_command", {"command": "kubectl delete pod web-1"}),
        env,
    )  # fmt: skip
    assert verdict == "allow", reason
    near = codexcli.pretooluse(
        ws, home, codexcli.event(ws, "Bash", {"command": "kubectl delete pod web-2"}),
        codexcli.shell_env(env),
    )  # fmt: skip
    assert near.blocked
    agents = {e["agent"] for e in events(ws, "gate_rule_used")}
    assert agents == {"Codex", "Gemini CLI"}


def test_an_allow_toml_that_does_not_read_passes_nothing(gated: Path) -> None:
    ws = gated
    claude(ws, "Bash", {"command": "rm -rf dist"})
    answer_open(ws, "allow always here")
    (ws / ".loopkit" / "allow.toml").write_text("[[allow]\nbroken")
    assert claude(ws, "Bash", {"command": "rm -rf dist"})["decision"] == "deny"
    assert loopkit("-C", str(ws), "rules").returncode == 65
