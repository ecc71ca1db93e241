"""Which heavy libraries each everyday command imports (SPEC §20): the set, never a time.

Each command runs in a fresh interpreter, as the console script would run it, in a workspace
``loopkit init`` made; afterwards the probe lists the heavy top-level packages in
``sys.modules``. A library a command does not use must not load: structlog (its stdlib bridge
imports asyncio), jinja2, rapidfuzz, httpx, watchdog, starlette, uvicorn, mcp, psycopg.

Nor do the everyday commands (every probe here that expects no click) import the standard
library's heavy modules they do without: ``dataclasses`` (it imports ``inspect``, ``ast``,
``dis``, ``tokenize`` and ``exec``\\ s each class's methods; loopkit's records are
``loopkit.datarecord``'s), ``typing`` (names for the type checker are imported for it alone),
``tomllib`` (a plain ``loopkit.toml`` is read by ``loopkit.config.plaintoml``), ``logging``
(bridged explicitly where loopkit brings in a library that logs), ``subprocess`` (no ``git``
outside a checkout),
``hashlib`` (it loads OpenSSL; a workspace's id is CPython's own SHA-256).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ESCALATE, LOOPKIT, POLICY, clean_env

HEAVY = ("asyncio", "structlog", "jinja2", "rapidfuzz", "httpx", "httpcore", "anyio", "watchdog",
         "starlette", "uvicorn", "mcp", "psycopg", "slack_sdk", "apprise",
         "websockets")  # fmt: skip
# loopkit's own machinery for sending, and the stuck detector's masks: a command that only
# reads builds none of it.
SENDING = ("loopkit.escalation.escalator", "loopkit.escalation.sender", "loopkit.channels",
           "loopkit.supervisor.normalise", "tempfile", "secrets")  # fmt: skip
STDLIB = ("dataclasses", "inspect", "typing", "tomllib", "logging", "subprocess", "hashlib")
SENDS = ["loopkit.channels", "loopkit.escalation.escalator", "loopkit.escalation.sender"]
PROBE = f"""
import json, sys
from loopkit.main import main
code = main(sys.argv[2:])
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
clicked = "click" in sys.modules
heavy += sorted(set(sys.modules) & set({SENDING!r}))
mine = sorted(name for name in sys.modules if name.startswith("loopkit."))
open(sys.argv[1], "w").write(
    json.dumps({{"code": code, "heavy": heavy, "loopkit": mine, "click": clicked,
                "stdlib": sorted(set(sys.modules) & set({STDLIB!r}))}})
)
"""


def _imports(
    ws: Path, *args: str, expect: int = 0, own: bool = False, click: bool = False
) -> list[str]:
    """The heavy libraries (``own``: loopkit's modules) ``loopkit -C WS ARGS`` imported;
    click only if ``click`` (the everyday commands do without it, SPEC §20)."""
    out = ws.parent / "imports.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "-C", str(ws), *args],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["code"] == expect, done.stderr
    assert result["click"] == click, args
    if not click:  # an everyday command
        assert result["stdlib"] == [], args
    listed: list[str] = result["loopkit" if own else "heavy"]
    return listed


@pytest.fixture
def workspace(ws: Path) -> Path:
    _imports(ws, "init", "--agent", "true", click=True)
    return ws


def test_reading_commands_import_no_heavy_library(workspace: Path) -> None:
    for args in (["status"], ["requests"], ["inbox"], ["--help"], ["status", "--json"], ["ps"],
                 ["ps", "--json"]):  # fmt: skip
        assert _imports(workspace, *args) == [], args


def test_a_block_and_its_answer(workspace: Path) -> None:
    # BLOCKED.md from the template `loopkit init` copied, its events recorded: no library,
    # only loopkit's own sending.
    assert _imports(workspace, *ESCALATE, expect=2) == SENDS
    [record] = (workspace / "requests").glob("*.json")
    assert _imports(workspace, "status") == []
    assert _imports(workspace, "ps") == []  # a registered, blocked loop with its question
    assert _imports(workspace, "reply", "--request-id", record.stem, "--reply", "A") == []
    assert _imports(workspace, "unblock") == []


def test_ask_writes_a_question_without_heavy_libraries(workspace: Path) -> None:
    asked = ["ask", "-s", "The helper's name is unclear.", "-p", POLICY, "-q", "Rename it?"]
    assert _imports(workspace, *asked) == SENDS
    assert len(list((workspace / "requests").glob("*.json"))) == 1


def test_help_reads_no_config_and_builds_no_store(workspace: Path) -> None:
    loaded = _imports(workspace, "--help", own=True)
    assert not {"loopkit.config", "loopkit.requests.store", "loopkit.fleet"} & set(loaded), loaded


def test_the_unattended_claude_hooks_import_no_heavy_library(workspace: Path) -> None:
    """stop-failure records a line; permission-request given no call decides nothing: both
    on the fast path of ``loopkit.main``, with no click and no heavy library."""
    probe = PROBE.replace(
        "heavy = sorted(", "heavy = sorted({'click'} & set(sys.modules)) + sorted("
    )
    out = workspace.parent / "imports.json"
    for event, payload in (
        ("stop-failure", {"hook_event_name": "StopFailure", "error": "rate_limit"}),
        ("permission-request", {"hook_event_name": "PermissionRequest"}),
    ):
        payload["cwd"] = str(workspace)
        subprocess.run(
            [sys.executable, "-c", probe, str(out), "-C", str(workspace), "hook", "claude", event],
            input=json.dumps(payload), capture_output=True, text=True, env=clean_env(), timeout=60,
        )  # fmt: skip
        result = json.loads(out.read_text())
        assert (result["code"], result["heavy"]) == (0, []), event
    assert json.loads((workspace / ".loopkit" / "agent_failure.json").read_text())["error"] == (
        "rate_limit"
    )


def test_the_installed_command_imports_no_re_before_check(workspace: Path) -> None:
    """The `loopkit` on PATH is loopkit's own script, not pip's generated wrapper, which
    imports ``re`` (6 ms here, a third of `check`'s start-up) to strip a Windows suffix."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(LOOPKIT), "-C", str(workspace), "check"],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "loopkit.check" in imported
    assert not imported & {"re", "enum", "typing", "json"}, sorted(imported)


# What the gate's no-match path must not import: ``re`` alone is a third of its start.
LEAN = ("re", "typing", "json", "fnmatch", "enum", "collections")
LEAN_PROBE = f"""
import sys
before = set(sys.modules)
from loopkit.main import main
code = main(sys.argv[2:])
loaded = sorted(set({LEAN!r}) & (set(sys.modules) - before))
early = sorted(set({LEAN!r}) & before)  # loaded before loopkit: the probe would see nothing
open(sys.argv[1], "w").write(" ".join([str(code), *loaded, *("early:" + n for n in early)]))
"""


@pytest.mark.parametrize(
    ("agent", "event", "tool"),
    [("claude", "pretooluse", "Bash"), ("codex", "pretooluse", "Bash"),
     ("gemini", "beforetool", "run_shell_command")],
)  # fmt: skip
def test_the_gates_no_match_path_imports_no_re_typing_or_json(
    workspace: Path, agent: str, event: str, tool: str
) -> None:
    """A tool call no rule can hold, as the agent runs the hook (in the session's folder) and
    as `loopkit run` names the workspace: exit 0 with none of them loaded — once the first
    call has loaded loopkit.toml (its stat is kept: hooks.gateconfig)."""
    out = workspace.parent / "imports.json"
    call = {"session_id": "s", "cwd": str(workspace), "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": {"command": "pytest -q"}}  # fmt: skip
    first = subprocess.run([str(LOOPKIT), "hook", agent, event], input=json.dumps(call),
                           capture_output=True, text=True, env=clean_env(), cwd=workspace,
                           timeout=60)  # fmt: skip
    assert first.returncode == 0, first.stderr
    for where in ([], ["-C", str(workspace)]):
        out.unlink(missing_ok=True)  # (a run that wrote nothing must not read the last one's)
        done = subprocess.run(
            [sys.executable, "-c", LEAN_PROBE, str(out), *where, "hook", agent, event],
            input=json.dumps(call), capture_output=True, text=True, env=clean_env(),
            cwd=workspace, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert out.read_text().split() == ["0"], where  # the exit, and nothing loaded


def test_the_long_running_processes_log_through_structlog_and_the_short_ones_do_not(
    workspace: Path,
) -> None:
    """SPEC §27: structlog is the logger of ``run`` (and ``serve``, ``mcp``); ``status``,
    ``reply`` and the hooks stay within their start-up budget without it."""
    assert "structlog" in _imports(workspace, "run", "--max-iterations", "1", click=True)
    assert "structlog" not in _imports(workspace, "status")
