"""The gate reads the config as written: ``[gate]`` in any valid TOML spelling is applied, by
the hook's full path and by its fast path alike (SPEC section 17)."""

from __future__ import annotations

import json
import subprocess
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit.hooks.pretooluse import _surely_ungated, load_rules, may_hold_gate
from loopkit.hooks.rules import Rules, match

from helpers import LOOPKIT, clean_env, write_config

RULE = r"\bnpm\s+publish\b"
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


def test_a_gate_table_is_kept_when_another_table_is_broken(ws: Path) -> None:
    """A typo elsewhere in loopkit.toml does not drop the user's own rules: the valid
    [gate] still applies, and a call it names is denied saying what is wrong."""
    write_config(ws, f"[loop]\nagnet = 'x'\n[gate]\nrules = ['{RULE}']\n")
    rules = load_rules(str(ws))
    assert match(rules, "Bash", {"command": "npm publish"}, str(ws)) is not None
    assert rules.problems and "agnet" in rules.problems[0]


def test_the_scan_parses_whenever_it_cannot_prove_there_is_no_gate(ws: Path) -> None:
    assert not may_hold_gate(str(ws))  # no loopkit.toml
    write_config(ws, "[loop]\npause = '1s'\n")
    assert not may_hold_gate(str(ws))
    for text in ("[ gate ]\n", "['\\u0067ate']\n", '["\\U00000067ate"]\n', "# navigate\n"):
        write_config(ws, text)
        assert may_hold_gate(str(ws)), text
    # A file too long to scan cheaply may hold one past the part read.
    write_config(ws, "# " + "x" * (2 << 20) + "\n[gate]\nrules = ['npm']\n")
    assert may_hold_gate(str(ws))
    (ws / "loopkit.toml").unlink()
    (ws / "loopkit.toml").mkdir()  # not a file: config.load says what is wrong
    assert may_hold_gate(str(ws))


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
