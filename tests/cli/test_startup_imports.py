"""Which heavy libraries each everyday command imports (SPEC §20): the set, never a time.

Each command runs in a fresh interpreter, as the console script would run it, in a workspace
``loopkit init`` made; afterwards the probe lists the heavy top-level packages in
``sys.modules``. A library a command does not use must not load: structlog (its stdlib bridge
imports asyncio), jinja2, rapidfuzz, httpx, watchdog, starlette, uvicorn, mcp, psycopg.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ESCALATE, POLICY, clean_env

HEAVY = ("asyncio", "structlog", "jinja2", "rapidfuzz", "httpx", "httpcore", "anyio", "watchdog",
         "starlette", "uvicorn", "mcp", "psycopg")  # fmt: skip
PROBE = f"""
import json, sys
from loopkit.main import main
code = main(sys.argv[2:])
heavy = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
open(sys.argv[1], "w").write(json.dumps({{"code": code, "heavy": heavy}}))
"""


def _imports(ws: Path, *args: str, expect: int = 0) -> list[str]:
    out = ws.parent / "imports.json"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "-C", str(ws), *args],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["code"] == expect, done.stderr
    heavy: list[str] = result["heavy"]
    return heavy


@pytest.fixture
def workspace(ws: Path) -> Path:
    _imports(ws, "init", "--agent", "true")
    return ws


def test_reading_commands_import_no_heavy_library(workspace: Path) -> None:
    for args in (["status"], ["requests"], ["inbox"], ["--help"], ["status", "--json"], ["ps"],
                 ["ps", "--json"]):  # fmt: skip
        assert _imports(workspace, *args) == [], args


def test_a_block_and_its_answer(workspace: Path) -> None:
    # escalate renders BLOCKED.md (jinja2) and records its events (structlog); nothing else.
    assert _imports(workspace, *ESCALATE, expect=2) == ["asyncio", "jinja2", "structlog"]
    [record] = (workspace / "requests").glob("*.json")
    assert _imports(workspace, "status") == []
    assert _imports(workspace, "ps") == []  # a registered, blocked loop with its question
    assert _imports(workspace, "reply", "--request-id", record.stem, "--reply", "A") == []
    assert _imports(workspace, "unblock") == []


def test_ask_writes_a_question_without_heavy_libraries(workspace: Path) -> None:
    asked = ["ask", "-s", "The helper's name is unclear.", "-p", POLICY, "-q", "Rename it?"]
    assert _imports(workspace, *asked) == []
    assert len(list((workspace / "requests").glob("*.json"))) == 1
