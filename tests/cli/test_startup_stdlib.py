"""The standard library's heavy modules an everyday command does without (SPEC §20), pinned
by name, never by time: ``dataclasses`` (it imports ``inspect``, ``ast``, ``dis``,
``tokenize`` and ``exec``\\ s each class's methods; loopkit's records are ``loopkit.record``'s),
``typing`` (names for the type checker are imported for it alone), ``tomllib`` (a plain
``loopkit.toml`` is read by ``loopkit.config.plaintoml``), ``logging`` (bridged only when a
library imports it), ``subprocess`` (no ``git`` outside a checkout), ``hashlib`` (it loads
OpenSSL; a workspace id is CPython's own SHA-256) — and click.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import ESCALATE, POLICY, clean_env

HEAVY = ("dataclasses", "inspect", "typing", "tomllib", "logging", "subprocess", "click",
         "hashlib")  # fmt: skip
PROBE = f"""
import json, sys
from loopkit.main import main
code = main(sys.argv[2:])
loaded = sorted(set({HEAVY!r}) & set(sys.modules))
open(sys.argv[1], "w").write(json.dumps({{"code": code, "loaded": loaded}}))
"""


def _loaded(ws: Path, *args: str, expect: int = 0) -> list[str]:
    out = ws.parent / "loaded.json"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(out), "-C", str(ws), *args],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["code"] == expect, done.stderr
    loaded: list[str] = result["loaded"]
    return loaded


def test_the_everyday_commands_import_none_of_them(ws: Path) -> None:
    _loaded(ws, "init", "--agent", "true")  # init is no everyday command: click, tomli_w …
    for args in (["status"], ["status", "--json"], ["requests"], ["inbox"], ["--help"]):
        assert _loaded(ws, *args) == [], args
    assert _loaded(ws, *ESCALATE, expect=2) == []
    [record] = (ws / "requests").glob("*.json")
    assert _loaded(ws, "reply", "--request-id", record.stem, "--reply", "A") == []
    assert _loaded(ws, "unblock") == []
    asked = ["ask", "-s", "The helper's name is unclear.", "-p", POLICY, "-q", "Rename it?"]
    assert _loaded(ws, *asked) == []
