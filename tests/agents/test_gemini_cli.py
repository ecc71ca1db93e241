"""Gemini CLI 0.61.0, as installed from the npm registry, in the kit ``loopkit init --agent
gemini`` writes, against a fake Gemini API (:mod:`gemini_api`, ``GOOGLE_GEMINI_BASE_URL``).

Whole turns: init trusts the folder (Gemini CLI runs a folder's hooks only there, and a
headless run elsewhere exits 55); the gated call never runs before the answer and runs
once after, retried with other words; doctor agrees with Gemini CLI about trust.
Reproduce with ``.venv/bin/python -m pytest -q -n0 tests/agents/test_gemini_cli.py``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agentloop import Loop, agent_env
from gemini_api import GeminiApi
from wire import Call, Say

GATED = "rm -rf build"


@pytest.fixture
def gemini_loop(tmp_path: Path, gemini_cli: Path, refusing_port: int) -> Any:
    def make(api: GeminiApi) -> Loop:
        home = tmp_path / "home"
        (home / ".gemini").mkdir(parents=True)
        # The user's settings: the API key's auth, nothing sent anywhere else.
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False},
                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}  # fmt: skip
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env = agent_env(home, gemini_cli, refusing_port, GEMINI_API_KEY=api.api_key,
                        GOOGLE_GEMINI_BASE_URL=api.url)  # fmt: skip
        loop = Loop(tmp_path / "shop", env)
        (loop.ws / "TASKS.md").write_text("- [ ] clean the build\n")
        (loop.ws / "build").mkdir()
        (loop.ws / "build" / "out.o").write_text("old\n")
        done = loop.lk("init", "--agent", "gemini", "--task-file", "TASKS.md")
        assert done.returncode == 0, done.stdout + done.stderr
        assert (
            "trusted" in done.stdout
            and "--skip-trust" not in (loop.ws / "loopkit.toml").read_text()
        )
        loop.setting("pause", '"0s"')
        loop.git("add", "-A")
        loop.git("commit", "-qm", "start")
        return loop

    return make


def test_gemini_asks_before_a_gated_call_and_runs_it_once_after(gemini_loop: Any) -> None:
    script = [
        Call("run_shell_command", {"command": GATED, "description": "Clean the build"}),
        Say("The cleanup waits for a human's approval."),
        Call("run_shell_command", {"command": GATED, "description": "Remove old build output"}),
        Call("write_file", {"file_path": "TASKS.md", "content": "- [x] clean the build\n"}),
        Say("Done."),
    ]
    with GeminiApi(script) as api:
        loop = gemini_loop(api)
        doctor = loop.lk("doctor")
        assert "ok      trust: Gemini CLI trusts this folder" in doctor.stdout, doctor.stdout

        first = loop.run()
        assert first.returncode == 2, first.stdout + first.stderr
        assert (loop.ws / "build" / "out.o").exists()  # never before the answer
        (request,) = loop.open_requests()
        assert request["prompt"] == f"Approve Gemini CLI's `{GATED}`?"
        loop.reply(request["request_id"], "approve")

        second = loop.run()
        assert second.returncode == 0, second.stdout + second.stderr
        assert not (loop.ws / "build").exists()  # once, after the answer
        calls = [(c["args"]["command"], r) for c, r in api.function_calls()
                 if c["name"] == "run_shell_command"]  # fmt: skip
        assert len(calls) == 2 and "error" in calls[0][1] and "error" not in calls[1][1]
        assert len(loop.requests()) == 1  # reworded, the same approval
        assert not api.rejected and not api.unforeseen

        # Untrusted, Gemini CLI refuses the run (exit 55) — and doctor says so first.
        trusted = Path(loop.env["HOME"]) / ".gemini" / "trustedFolders.json"
        trusted.write_text("{}")
        doctor = loop.lk("doctor")
        assert (
            doctor.returncode == 1 and "problem trust: Gemini CLI does not trust" in doctor.stdout
        )
        refused = subprocess.run(["gemini", "-p", "hi"], cwd=loop.ws, env=loop.env,
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
        assert refused.returncode == 55, refused.stderr
