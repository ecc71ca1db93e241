"""The gate reads the config as written: ``[gate]`` in any valid TOML spelling is applied, by
the hook's full path and by its fast path alike (SPEC section 17); a ``loopkit.toml`` that
does not load denies every call, saying why — never the defaults in place of the user's
rules (SPEC section 28)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit.hooks.gateconfig import load_rules
from loopkit.hooks.gatestamp import defaults_hold
from loopkit.hooks.pretooluse import _surely_ungated
from loopkit.hooks.rules import Rules, match

from helpers import LOOPKIT, clean_env, write_config

RULE = r"\bnpm\s+publish\b"
_WORDS_OF_CALLS = ["npm", "publish", "ls", "pytest", "-q", "cat", "README.md", "git", "status"]
SPELLINGS = {
    "[gate]": "[gate]\nrules = ['{rule}']\nprotect = ['*.md']\n",
    "[ gate ]": "[ gate ]\nrules = ['{rule}']\nprotect = ['*.md']\n",
    '["gate"]': "[\"gate\"]\nrules = ['{rule}']\nprotect = ['*.md']\n",
    '[ "gate" ]': "[ \"gate\" ]\nrules = ['{rule}']\nprotect = ['*.md']\n",
    "['gate']": "['gate']\nrules = ['{rule}']\nprotect = ['*.md']\n",
    '["g\\u0061te"]': "[\"g\\u0061te\"]\nrules = ['{rule}']\nprotect = ['*.md']\n",
    "gate.rules": "gate.rules = ['{rule}']\ngate.protect = ['*.md']\n",
    "gate . rules": "gate . rules = ['{rule}']\ngate . protect = ['*.md']\n",
    '"gate".rules': "\"gate\".rules = ['{rule}']\n'gate'.protect = ['*.md']\n",
    "inline table": "gate = {{ rules = ['{rule}'], protect = ['*.md'] }}\n",
    "[gate] after [loop]": "[loop]\npause = '1s'\n[gate] # ours\nrules = ['{rule}']\n"
    "protect = ['*.md']\n",
}


def _raw(cwd: Path, tool: str, tool_input: object) -> bytes:
    payload = {
        "session_id": "s",
        "cwd": str(cwd),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }
    return json.dumps(payload).encode()


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_spelling_of_the_gate_table_is_applied(ws: Path, spelling: str) -> None:
    text = SPELLINGS[spelling].format(rule=RULE)
    assert tomllib.loads(text)["gate"]["rules"] == [RULE]  # valid TOML, a gate table
    write_config(ws, text)
    rules = load_rules(str(ws))
    assert match(rules, "Bash", {"command": "npm publish"}, str(ws)) is not None
    assert match(rules, "Write", {"file_path": str(ws / "README.md")}, str(ws)) is not None
    assert match(rules, "Bash", {"command": "rm -rf x"}, str(ws)) is None  # replaced
    publish = _raw(ws, "Bash", {"command": "npm publish"})
    assert not _surely_ungated(publish, str(ws))


@pytest.mark.parametrize("spelling", ["[ gate ]", '["gate"]', "gate.rules", "inline table"])
def test_the_installed_hook_holds_a_call_the_users_rule_names(ws: Path, spelling: str) -> None:
    """The attack: a valid spelling made the hook exit 0 with no output (the call ran)."""
    # First: a dotted or inline gate after a [table] header would belong to that table.
    spelled = SPELLINGS[spelling].format(rule=RULE)
    write_config(ws, spelled + "[escalation]\nchannel = 'none'\n[hooks]\nwait = '0s'\n")
    done = subprocess.run(
        [str(LOOPKIT), "hook", "claude", "pretooluse"],
        input=_raw(ws, "Bash", {"command": "npm publish"}),
        cwd=ws,
        capture_output=True,
        timeout=60,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)["hookSpecificOutput"]
    assert verdict["permissionDecision"] == "deny"


def test_the_fast_path_trusts_a_file_only_as_it_was_when_it_loaded(ws: Path) -> None:
    """The stat of a loopkit.toml that loaded is kept; any change, and any file that does
    not load or holds a gate of its own, is loaded again (the fast path parses)."""
    assert defaults_hold(str(ws)) == "BLOCKED.md"  # no loopkit.toml
    write_config(ws, "[escalation]\nblocked_file = 'STUCK.md'\n")
    assert defaults_hold(str(ws)) is None  # not loaded yet
    assert load_rules(str(ws)).broken is None
    assert defaults_hold(str(ws)) == "STUCK.md"
    write_config(ws, "[escalation]\nblocked_file = 'STUCK.md'\n[gate]\nrules = ['npm']\n")
    assert defaults_hold(str(ws)) is None  # changed
    assert load_rules(str(ws)).commands == ("npm",)
    assert defaults_hold(str(ws)) is None  # a gate of its own: loaded every time
    write_config(ws, "[escalation]\nblocked_fil = 'x'\n")
    assert load_rules(str(ws)).broken is not None
    assert defaults_hold(str(ws)) is None  # never remembered
    (ws / "loopkit.toml").unlink()
    os.mkfifo(ws / "loopkit.toml")
    assert defaults_hold(str(ws)) is None
    assert "FIFO" in str(load_rules(str(ws)).broken)


# --- a loopkit.toml that does not load ----------------------------------------------------

# Ways a loopkit.toml holding the user's own rule fails to load, as a human (or an agent)
# leaves it; each is a config error `loopkit run` refuses to start with.
_BREAKS = {
    "a rule that is no regular expression": lambda text: text.replace(
        "rules = [", "rules = ['(unclosed', "
    ),
    "a syntax error": lambda text: text + "[loop\n",
    "a byte-order mark": lambda text: "\ufeff" + text,
    "an unknown key": lambda text: text + "[loop]\nagnet = 'claude'\n",
    "an unknown table": lambda text: text + "[lop]\npause = '1s'\n",
    "a value of the wrong kind": lambda text: text + "[hooks]\nwait = 'forever'\n",
    "a gate that is no table": lambda text: "gate = 3\n",
    "a misspelt gate": lambda text: text.replace("[gate]", "[gat]"),
    "a duplicated table": lambda text: text + "[gate]\nprotect = []\n",
    "a key set twice": lambda text: text.replace("[gate]\n", "[gate]\nrules = []\n"),
    "not UTF-8": lambda text: text + "# caf\udce9\n",
    "an empty list item": lambda text: text.replace("rules = [", "rules = [ , "),
    "nested too deep": lambda text: text + "x = " + "[" * 3000 + "]" * 3000 + "\n",
}
_USERS = "[gate]\nrules = ['{rule}']\nextend_defaults = true\n"


def _write_broken(ws: Path, how: str, then: str = "") -> None:
    text = _BREAKS[how](_USERS.format(rule=RULE)) + then
    (ws / "loopkit.toml").write_bytes(text.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("how", _BREAKS)
def test_a_config_that_does_not_load_keeps_no_rule_and_says_why(ws: Path, how: str) -> None:
    """Before: a lenient load kept what it could and dropped the rest — the user's own rule
    among it (13/13): `npm publish` ran. Now every call is denied with the error."""
    from loopkit import config
    from loopkit.errors import ConfigError

    _write_broken(ws, how)
    with pytest.raises(ConfigError) as error:
        config.load(ws)
    rules = load_rules(str(ws))
    assert rules.broken is not None and str(error.value) in rules.broken
    for tool, tool_input in (("Bash", {"command": "npm publish"}), ("Bash", {"command": "ls"}),
                             ("Read", {"file_path": "x"})):  # fmt: skip
        assert not _surely_ungated(_raw(ws, tool, tool_input), str(ws))


@pytest.mark.parametrize("how", sorted(_BREAKS)[::3])
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_every_hook_denies_every_call_while_the_config_does_not_load(
    ws: Path, how: str, agent: str
) -> None:
    _write_broken(ws, how)
    tool = {"claude": "Bash", "codex": "Bash", "gemini": "run_shell_command"}[agent]
    event = {"claude": "pretooluse", "codex": "pretooluse", "gemini": "beforetool"}[agent]
    for command in ("npm publish", "pytest -q"):
        done = subprocess.run(
            [str(LOOPKIT), "hook", agent, event],
            input=_raw(ws, tool, {"command": command}),
            cwd=ws,
            capture_output=True,
            timeout=60,
            env=clean_env(),
        )
        assert done.returncode == 2 and done.stdout == b"", (how, command, done.stdout)
        [line] = done.stderr.decode().splitlines()
        assert "loopkit.toml" in line and "denies every call" in line, line


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    how=st.sampled_from(sorted(_BREAKS)),
    then=st.sampled_from(["", "\n", "# a comment\n", "[loop]\npause = '1s'\n"]),
    command=st.lists(st.sampled_from(_WORDS_OF_CALLS), min_size=1, max_size=4).map(" ".join),
)
def test_no_broken_config_lets_any_call_through(
    ws: Path, how: str, then: str, command: str
) -> None:
    """Whatever else the file holds, a file that does not load denies — the fast path never
    waves a call through on the strength of a file it has not loaded."""
    _write_broken(ws, how, then)
    assert load_rules(str(ws)).broken is not None
    assert not _surely_ungated(_raw(ws, "Bash", {"command": command}), str(ws))


# --- the property: the fast path never waves through a call the full rules stop ------------

_USER_RULES = [RULE, r"deploy\s+prod", r"^make\s+release$", "tool:mcp__*__delete_*", "rm"]
_WORDS = ["npm", "publish", "deploy", "prod", "make", "release", "rm", "-rf", "git", "push",
          "--force", "ls", "pytest", "-q", "reset", "--hard", "curl", "|", "sh"]  # fmt: skip


def _escaped(word: str, picks: list[bool]) -> str:
    """``word`` as a basic string's content, some letters written as \\u / \\U escapes."""
    out = []
    for letter, escape in zip(word, picks, strict=False):
        if escape:
            out.append(f"\\u{ord(letter):04x}" if ord(letter) % 2 else f"\\U{ord(letter):08x}")
        else:
            out.append(letter)
    return "".join(out)


@st.composite
def gate_tables(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A valid loopkit.toml spelling a gate table some way, and the table it means."""
    rules = draw(st.lists(st.sampled_from(_USER_RULES), min_size=1, max_size=3, unique=True))
    table: dict[str, Any] = {"rules": rules}
    if draw(st.booleans()):
        table["extend_defaults"] = draw(st.booleans())
    if draw(st.booleans()):
        table["protect"] = draw(st.lists(st.sampled_from(["*.md", "secrets/**"]), max_size=2))
    space = draw(st.sampled_from(["", " ", "\t", "  "]))
    quote = draw(st.sampled_from(["bare", "basic", "literal", "escaped"]))
    picks = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    name = {
        "bare": "gate",
        "basic": '"gate"',
        "literal": "'gate'",
        "escaped": f'"{_escaped("gate", picks if any(picks) else [True, False, False, False])}"',
    }[quote]

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        items = [f"'{item}'" if draw(st.booleans()) else json.dumps(item) for item in v]
        return "[" + ", ".join(items) + "]"

    form = draw(st.sampled_from(["header", "dotted", "inline"]))
    if form == "header":
        body = "".join(f"{k}{space}={space}{value(v)}\n" for k, v in table.items())
        gate = f"[{space}{name}{space}]\n{body}"
    elif form == "dotted":
        gate = "".join(f"{name}{space}.{space}{k} = {value(v)}\n" for k, v in table.items())
    else:
        pairs = ", ".join(f"{k} = {value(v)}" for k, v in table.items())
        gate = f"{name} = {{{space}{pairs}{space}}}\n"
    before = draw(st.sampled_from(["", "# loopkit\n", "\n\n"]))
    after = draw(st.sampled_from(["", "[loop]\npause = '1s'\n", "[hooks]\nwait = '1s'\n"]))
    return before + gate + after, table  # dotted and inline forms come before any header


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    spelled=gate_tables(),
    command=st.lists(st.sampled_from(_WORDS), min_size=1, max_size=5).map(" ".join),
    tool=st.sampled_from(["Bash", "Write", "mcp__github__delete_repo", "Read"]),
)
def test_the_fast_path_never_waves_through_a_call_the_full_rules_stop(
    spelled: tuple[str, dict[str, Any]], command: str, tool: str
) -> None:
    text, table = spelled
    assert tomllib.loads(text)["gate"] == table, text  # the spelling means this table
    truth = Rules.build(table["rules"], table.get("protect"), table.get("extend_defaults", False))
    with tempfile.TemporaryDirectory() as folder:
        ws = Path(folder)
        (ws / "loopkit.toml").write_text(text)
        tool_input = {"command": command} if tool == "Bash" else {"file_path": str(ws / "a.md")}
        stopped = match(truth, tool, tool_input, str(ws)) is not None
        assert (match(load_rules(str(ws)), tool, tool_input, str(ws)) is not None) == stopped
        if stopped:
            assert not _surely_ungated(_raw(ws, tool, tool_input), str(ws)), (text, command)
