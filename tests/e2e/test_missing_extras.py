"""An optional part this install lacks (SPEC §26) is a clear error, never "a bug": Slack's
app without ``slack_sdk``, channel apprise without Apprise, a fleet without psycopg — each
named with the ``pip install`` that fixes it, exit 78, in ``doctor``, ``send-test``, ``run``
and ``serve``. The part is taken away as a missing install is: the import system cannot find
it (a ``sitecustomize`` in the child's PYTHONPATH hides it from the path finder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import clean_env, loopkit, write_config

HIDE = """
import os
import sys
from importlib.machinery import PathFinder

HIDDEN = set(os.environ["LOOPKIT_TEST_HIDDEN"].split(","))


class Without(PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            return None
        return PathFinder.find_spec(name, path, target)


sys.meta_path = [Without if finder is PathFinder else finder for finder in sys.meta_path]
"""

SLACK_APP = {"LOOPKIT_HITL_CHANNEL": "slack", "LOOPKIT_HITL_SLACK_MODE": "socket",
             "LOOPKIT_HITL_SLACK_BOT_TOKEN": "xoxb-1-2-abc", "LOOPKIT_HITL_SLACK_APP_TOKEN":
             "xapp-1-A0-1-abc", "LOOPKIT_HITL_SLACK_CHANNEL": "C0LOOPS"}  # fmt: skip
APPRISE = {"LOOPKIT_HITL_CHANNEL": "apprise", "LOOPKIT_HITL_APPRISE_URLS": "json://127.0.0.1:9/x"}
FLEET = {"LOOPKIT_FLEET_DSN": "postgresql://loopkit@127.0.0.1:9/loopkit"}

CASES = [
    ("slack_sdk", "slack", SLACK_APP, ["doctor", "send-test", "run", "serve"]),
    ("apprise", "apprise", APPRISE, ["doctor", "send-test", "run"]),
    ("psycopg", "fleet", FLEET, ["doctor", "send-test", "run", "serve", "status"]),
]


def hidden_env(tmp_path: Path, module: str, settings: dict[str, str]) -> dict[str, str]:
    folder = tmp_path / "hide"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(HIDE)
    return clean_env(PYTHONPATH=str(folder), LOOPKIT_TEST_HIDDEN=module, **settings)


@pytest.mark.parametrize(("module", "extra", "settings", "commands"), CASES)
def test_a_missing_extra_is_a_config_error_naming_its_install(
    ws: Path, tmp_path: Path, module: str, extra: str, settings: dict[str, str],
    commands: list[str],
) -> None:  # fmt: skip
    write_config(ws, '[loop]\nagent = "true"\n')
    env = hidden_env(tmp_path, module, settings)
    fix = f"pip install 'loopkit[{extra}]'"
    for command in commands:
        args = {"run": ["run", "--max-iterations", "1"],
                "serve": ["serve", "--listen", "127.0.0.1:0"]}.get(command, [command])  # fmt: skip
        done = loopkit("-C", str(ws), *args, env=env, timeout=30)
        said = done.stdout + done.stderr
        assert done.returncode == 78, (command, said)
        assert fix in said and "a bug" not in said, (command, said)
    assert not (ws / ".loopkit" / "state.json").exists()  # run refused before iteration 1


def test_the_hidden_module_is_really_missing_to_the_child(tmp_path: Path, ws: Path) -> None:
    """The fixture is sound: the child cannot import the part, and imports the rest."""
    import subprocess
    import sys

    env = hidden_env(tmp_path, "slack_sdk", {})
    code = "import importlib.util as u, httpx; print(u.find_spec('slack_sdk'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.strip() == "None"
