"""The everyday commands make their records without the standard library's ``dataclasses``
(SPEC §20): it imports ``inspect`` (and ``ast``, ``dis``, ``tokenize``: ~10 ms here) and
``exec``\\ s each class's methods at import; loopkit's records are ``loopkit.record``'s.

``inspect`` itself is not pinned: click imports it, and these commands still load click.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import ESCALATE, POLICY, clean_env

PROBE = """
import json, sys
from loopkit.main import main
code = main(sys.argv[2:])
loaded = sorted({"dataclasses", "inspect"} & set(sys.modules))
open(sys.argv[1], "w").write(json.dumps({"code": code, "loaded": loaded}))
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


def test_the_everyday_commands_import_no_dataclasses(ws: Path) -> None:
    assert "dataclasses" not in _loaded(ws, "init", "--agent", "true")
    for args in (["status"], ["status", "--json"], ["requests"], ["inbox"], ["--help"]):
        assert "dataclasses" not in _loaded(ws, *args), args
    assert "dataclasses" not in _loaded(ws, *ESCALATE, expect=2)
    [record] = (ws / "requests").glob("*.json")
    assert "dataclasses" not in _loaded(ws, "reply", "--request-id", record.stem, "--reply", "A")
    assert "dataclasses" not in _loaded(ws, "unblock")
    asked = ["ask", "-s", "The helper's name is unclear.", "-p", POLICY, "-q", "Rename it?"]
    assert "dataclasses" not in _loaded(ws, *asked)
