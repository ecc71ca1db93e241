"""Under ``loopkit run`` the agent cannot switch the gate off (SPEC section 28): a change to
``loopkit.toml``, the agents' settings and hooks, ``.loopkit/``, ``requests/`` or an existing
``BLOCKED.md`` — by a file tool or by the shell — is a gated call, whatever the spelling;
reading them, and raising a block by writing a new ``BLOCKED.md``, go ahead."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from loopkit.hooks.gateconfig import load_rules
from loopkit.hooks.guard import Guard
from loopkit.hooks.pretooluse import _surely_ungated
from loopkit.hooks.rules import Rules, match

from helpers import LOOPKIT, clean_env, write_config

SETTINGS = [".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json",
            ".codex/config.toml", ".gemini/settings.json"]  # fmt: skip
OWN = ["loopkit.toml", "BLOCKED.md", ".loopkit/state.json", "requests/abc123.json", *SETTINGS]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def guarded(ws: Path, home: Path) -> Rules:
    """A workspace with loopkit's files in it, and its rules under ``loopkit run``."""
    write_config(ws, '[escalation]\nchannel = "none"\n')
    for name in OWN:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("{}\n" if name.endswith(".json") else "# x\n")
    assert load_rules(str(ws)).broken is None  # loaded once: the fast path answers after
    # no rule of the defaults: what holds a call here is the guard alone
    return Rules.build([], guard=Guard(str(ws), "BLOCKED.md", env={"HOME": str(home)}))


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit"])
@pytest.mark.parametrize("name", OWN)
def test_a_file_tool_changing_loopkits_files_is_gated(
    ws: Path, guarded: Rules, tool: str, name: str
) -> None:
    found = match(guarded, tool, {"file_path": str(ws / name)}, str(ws))
    assert found is not None and found.startswith("protect:"), found
    assert match(Rules.build(), tool, {"file_path": str(ws / name)}, str(ws)) is None


@pytest.mark.parametrize(
    "spelled",
    ["LOOPKIT.TOML", "./loopkit.toml", "src/../loopkit.toml", "Blocked.MD", ".Claude/x.json",
     "{ws}/.codex/hooks.json", "{home}/.claude/settings.json", "{home}/.gemini/settings.json",
     "{home}/.claude.json", "sub/.claude/settings.json", "linked.toml", "hardlink"],
)  # fmt: skip
def test_every_spelling_of_their_paths_is_gated(
    ws: Path, home: Path, guarded: Rules, spelled: str
) -> None:
    (ws / "linked.toml").symlink_to(ws / "loopkit.toml")
    os.link(ws / ".claude" / "settings.json", ws / "hardlink")
    path = spelled.format(ws=ws, home=home)
    assert match(guarded, "Write", {"file_path": path}, str(ws)) is not None, path
    notebook = {"notebook_path": path}
    assert match(guarded, "NotebookEdit", notebook, str(ws)) is not None, path


def test_an_agent_may_raise_a_block_but_not_change_one(ws: Path, guarded: Rules) -> None:
    (ws / "BLOCKED.md").unlink()
    write = {"file_path": str(ws / "BLOCKED.md"), "content": "## Question:\nWhich?\n"}
    assert match(guarded, "Write", write, str(ws)) is None  # a new block: asked as the agent's
    for command in ("cat > BLOCKED.md <<'EOF'\n## Question:\nWhich?\nEOF", "echo x > BLOCKED.md"):
        assert match(guarded, "Bash", {"command": command}, str(ws)) is None, command
    (ws / "BLOCKED.md").write_text("## Question:\nWhich?\n")
    assert match(guarded, "Edit", write, str(ws)) == "protect:BLOCKED.md"
    assert match(guarded, "Bash", {"command": "rm -f BLOCKED.md"}, str(ws)) == "protect:BLOCKED.md"


# --- the shell -----------------------------------------------------------------------------

# (how a command writes TARGET): each changes the file (or the folder holding it)
WRITERS = [
    "echo '[gate]' > {t}", "echo x >> {t}", "printf x >| {t}", "true &> {t}", "echo 2>{t}",
    "echo x 1> {t}", "echo x | tee {t}", "echo x | tee -a {t}", "sed -i s/a/b/ {t}",
    "sed -i.bak -e s/a/b/ {t}", "sed --in-place s/a/b/ {t}", "perl -pi -e s/a/b/ {t}",
    "mv {t} /tmp/away", "mv /tmp/x {t}", "cp /tmp/x {t}", "cp -f /tmp/x {t}", "rm {t}",
    "rm -f {t}", "unlink {t}", "truncate -s 0 {t}", "chmod 000 {t}", "chown nobody {t}",
    "ln -sf /tmp/x {t}", "dd if=/dev/zero of={t}", "git checkout -- {t}", "git restore {t}",
    "install -m 644 /tmp/x {t}", "rsync /tmp/x {t}", "shred {t}", "python3 edit.py {t}",
    "gawk -i inplace 1 {t}", "yq -i .a=1 {t}", "patch {t} fix.diff",
]  # fmt: skip
WRAPPED = ["{c}", "sudo {c}", "command {c}", "env X=1 {c}", "true && {c}", "true; {c}",
           "echo $({c})", "bash -c {q}", "sh -c {q}", "nice -n 5 {c}", "(cd . && {c})",
           "if true; then {c}; fi", "false || {c}", "timeout 5 {c}"]  # fmt: skip


@st.composite
def target(draw: st.DrawFn, ws: Path, home: Path) -> str:
    name = draw(st.sampled_from(OWN))
    how = draw(st.sampled_from(["relative", "absolute", "dot", "updown", "case", "quoted",
                                "glob", "home", "variable", "cd"]))  # fmt: skip
    if how == "absolute":
        return shlex.quote(str(ws / name))
    if how == "dot":
        return f"./{name}"
    if how == "updown":
        return f"src/../{name}"
    if how == "case":
        return "".join(c.upper() if draw(st.booleans()) else c for c in name)
    if how == "quoted":
        return f"'{name[:2]}'\"{name[2:]}\""
    if how == "glob":
        cut = draw(st.integers(1, len(name) - 1))
        return name[:cut] + "*"
    if how == "home" and name in SETTINGS:
        return draw(st.sampled_from([f"~/{name}", f"$HOME/{name}", f'"${{HOME}}/{name}"']))
    if how == "variable":
        return f'"$F"  # F={name}'
    if how == "cd" and "/" in name:
        folder, file = name.rsplit("/", 1)
        return f"__cd__{folder}__{file}"
    return name


def _spell(writer: str, wrapper: str, tgt: str) -> str:
    if tgt.startswith("__cd__"):
        folder, file = tgt[len("__cd__") :].split("__", 1)
        inner = f"cd {folder} && {writer.format(t=file)}"
    elif "# F=" in tgt:
        value = tgt.split("# F=", 1)[1]
        inner = f"F={value}; " + writer.format(t='"$F"')
    else:
        inner = writer.format(t=tgt)
    return wrapper.format(c=inner, q=shlex.quote(inner))


_SLOW = settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SLOW
@given(data=st.data())
@example(data=None)
def test_every_shell_write_to_loopkits_files_is_gated(
    ws: Path, home: Path, guarded: Rules, monkeypatch: pytest.MonkeyPatch, data: st.DataObject
) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOOPKIT_AGENT_SESSION", "s")
    monkeypatch.chdir(ws)
    if data is None:  # the attack's own: switch the gate off, then lift the block
        commands = [
            "printf '[gate]\\nrules = []\\n' > loopkit.toml", "rm -f BLOCKED.md",
            "sed -i /pretooluse/d .claude/settings.json", "mv loopkit.toml x.toml",
        ]  # fmt: skip
    else:
        tgt = data.draw(target(ws, home))
        writer = data.draw(st.sampled_from(WRITERS))
        assume(not ("of={t}" in writer and "*" in tgt))  # of=l* is a file named so
        commands = [_spell(writer, data.draw(st.sampled_from(WRAPPED)), tgt)]
    for command in commands:
        found = match(guarded, "Bash", {"command": command}, str(ws))
        assert found is not None and found.startswith("protect:"), (command, found)
        raw = json.dumps({"cwd": str(ws), "tool_name": "Bash", "tool_input": {"command": command}})
        assert not _surely_ungated(raw.encode(), str(ws)), command


@_SLOW
@given(data=st.data())
def test_the_fast_path_never_waves_through_what_the_guard_holds(
    ws: Path, home: Path, guarded: Rules, monkeypatch: pytest.MonkeyPatch, data: st.DataObject
) -> None:
    """Under ``loopkit run`` the fast path reads a short command for loopkit's own files
    itself (no json, no re): it passes only what the full path passes."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOOPKIT_AGENT_SESSION", "s")
    monkeypatch.chdir(ws)
    if data.draw(st.booleans()):
        command = data.draw(st.sampled_from(READERS))
    else:
        if not (ws / "linked.toml").is_symlink():
            (ws / "linked.toml").symlink_to(ws / "loopkit.toml")  # a link made before the run
        tgt = data.draw(
            target(ws, home) | st.sampled_from(["notes.txt", "src/a.py", "*.txt", "linked.toml"])
        )
        command = _spell(data.draw(st.sampled_from(WRITERS)),
                         data.draw(st.sampled_from(WRAPPED)), tgt)  # fmt: skip
    full = load_rules(str(ws), supervised=True)
    raw = json.dumps({"cwd": str(ws), "tool_name": "Bash", "tool_input": {"command": command}})
    if match(full, "Bash", {"command": command}, str(ws)) is not None:
        assert not _surely_ungated(raw.encode(), str(ws)), command


READERS = [
    "cat loopkit.toml", "grep -n gate loopkit.toml", "head -5 BLOCKED.md", "ls -la .claude",
    "cp loopkit.toml /tmp/backup.toml", "git add loopkit.toml", "git diff -- loopkit.toml",
    "git commit -m 'edit loopkit.toml and BLOCKED.md'", "loopkit check", "loopkit status",
    "jq . .claude/settings.json", "echo 'remember loopkit.toml'", "wc -l requests/*.json",
    "diff loopkit.toml /tmp/x", "sed -n 1,5p .codex/hooks.json", "pytest -q > out.txt 2>&1",
    "make test 2>/dev/null", "echo hi > notes.txt", "cp notes.txt docs/", "rm -rf build",
    "mv build dist", "chmod +x run.sh", "tee log.txt < /dev/null", "touch new.txt",
    "find src -name '*.py'", "sort -u names.txt", "sed -i s/a/b/ src/app.py",
]  # fmt: skip


@pytest.mark.parametrize("command", READERS)
def test_reading_them_and_writing_elsewhere_go_ahead(
    ws: Path, home: Path, guarded: Rules, command: str
) -> None:
    found = match(guarded, "Bash", {"command": command}, str(ws))
    assert found is None or not found.startswith("protect:"), (command, found)


# --- the hooks, as the agents run them ---------------------------------------------------


def _hook(ws: Path, agent: str, tool: str, given: dict[str, object], home: Path) -> str:
    """The agent's verdict on one call, as its CLI reads the hook's answer."""
    event = {"session_id": "s", "cwd": str(ws), "hook_event_name": "PreToolUse",
             "tool_name": tool, "tool_input": given}  # fmt: skip
    words = {"claude": ["claude", "pretooluse"], "codex": ["codex", "pretooluse"],
             "gemini": ["gemini", "beforetool"]}[agent]  # fmt: skip
    env = clean_env(LOOPKIT_AGENT_SESSION="s", HOME=str(home))
    done = subprocess.run([str(LOOPKIT), "hook", *words], input=json.dumps(event).encode(),
                          cwd=ws, capture_output=True, timeout=60, env=env)  # fmt: skip
    if done.returncode == 2:
        return "deny"
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout) if done.stdout.strip() else {}
    said = out.get("hookSpecificOutput", {}).get("permissionDecision") or out.get("decision")
    return "deny" if said in ("deny", "block") else "allow"


PATCH = "*** Begin Patch\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch\n"


@pytest.mark.parametrize(
    ("agent", "tool", "given"),
    [
        ("claude", "Write", {"file_path": "loopkit.toml", "content": "[gate]\nrules = []\n"}),
        ("claude", "Edit", {"file_path": ".claude/settings.json", "old_string": "a",
                            "new_string": "b"}),
        ("claude", "Bash", {"command": "printf '[gate]\\nrules = []\\n' > loopkit.toml"}),
        ("codex", "apply_patch", {"command": PATCH.format("loopkit.toml")}),
        ("codex", "apply_patch", {"command": PATCH.format(".codex/hooks.json")}),
        ("codex", "Bash", {"command": "sed -i /loopkit/d .codex/hooks.json"}),
        ("gemini", "write_file", {"file_path": ".gemini/settings.json", "content": "{}"}),
        ("gemini", "replace", {"file_path": "loopkit.toml", "old_string": "a", "new_string": "b"}),
        ("gemini", "run_shell_command", {"command": "rm -f BLOCKED.md"}),
    ],
)  # fmt: skip
def test_each_agents_hook_asks_before_its_gate_is_changed(
    ws: Path, home: Path, agent: str, tool: str, given: dict[str, object]
) -> None:
    """Before: the Write of `[gate] rules = []` was allowed, and the next `rm -rf` ran."""
    write_config(ws, '[escalation]\nchannel = "none"\n')
    (ws / "BLOCKED.md").write_text("# a block the agent must not lift\n")
    for name in SETTINGS:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("{}\n")
    assert _hook(ws, agent, tool, given, home) == "deny"
    outside = {"claude": "Read", "codex": "Read", "gemini": "read_file"}[agent]
    assert _hook(ws, agent, outside, {"file_path": "loopkit.toml"}, home) == "allow"


def test_under_run_a_command_that_writes_none_of_them_stays_on_the_fast_path(
    ws: Path, home: Path, guarded: Rules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No json, no re for the everyday writes under ``loopkit run`` (SPEC section 20)."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOOPKIT_AGENT_SESSION", "s")
    monkeypatch.chdir(ws)
    for command in ("cat loopkit.toml", "pytest -q > out.txt 2>&1", "cp a.txt b.txt",
                    "sed -n 1,5p .codex/hooks.json", "ls *.py"):  # fmt: skip
        raw = json.dumps({"cwd": str(ws), "tool_name": "Bash", "tool_input": {"command": command}})
        assert _surely_ungated(raw.encode(), str(ws)), command
    for command in ("cat > loopkit.toml", "sed -i s/a/b/ .codex/hooks.json", "rm BLOCK*"):
        raw = json.dumps({"cwd": str(ws), "tool_name": "Bash", "tool_input": {"command": command}})
        assert not _surely_ungated(raw.encode(), str(ws)), command


_PATHS = st.sampled_from(
    [*OWN, "LOOPKIT.TOML", "src/../loopkit.toml", "linked.toml", "src/app.py", "notes.txt",
     "sub/.claude/x", ".loopkit", "requests", "README.md", "BLOCKED.md.bak", "{home}/.claude.json"]
)  # fmt: skip


@_SLOW
@given(path=_PATHS, tool=st.sampled_from(["Write", "Edit", "MultiEdit", "NotebookEdit"]),
       absolute=st.booleans(), blocked=st.booleans())  # fmt: skip
def test_a_file_tools_call_is_on_the_fast_path_only_when_the_guard_passes_it(
    ws: Path, home: Path, guarded: Rules, monkeypatch: pytest.MonkeyPatch,
    path: str, tool: str, absolute: bool, blocked: bool,
) -> None:  # fmt: skip
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOOPKIT_AGENT_SESSION", "s")
    monkeypatch.chdir(ws)
    if not (ws / "linked.toml").is_symlink():
        (ws / "linked.toml").symlink_to(ws / "loopkit.toml")
    if not blocked:
        (ws / "BLOCKED.md").unlink(missing_ok=True)
    path = path.format(home=home)
    named = str(ws / path) if absolute and not path.startswith("/") else path
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    full = load_rules(str(ws), supervised=True)
    held = match(full, tool, {key: named}, str(ws)) is not None
    raw = json.dumps({"cwd": str(ws), "tool_name": tool, "tool_input": {key: named}}).encode()
    assert _surely_ungated(raw, str(ws)) == (not held), (tool, named, held)
    (ws / "BLOCKED.md").write_text("# x\n")
