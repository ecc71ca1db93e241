"""Codex CLI 0.171.0, as installed from the npm registry, in the kit ``loopkit init --agent
codex`` writes, against a fake OpenAI Responses API (:mod:`openai_api`) configured as a
model provider in the test's own ``$CODEX_HOME/config.toml``.

Whole turns: init has Codex trust the project and loopkit's hook (Codex runs a project's
hooks only then); the gated call never runs before the answer and runs once after; a patch
run through the shell is held by ``[gate] protect``; doctor fails once Codex would not run
the hook. Reproduce with ``.venv/bin/python -m pytest -q -n0 tests/agents/test_codex_cli.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agentloop import Loop, agent_env
from openai_api import OpenAIApi
from wire import Call, Say

GATED = "git reset --hard"  # Codex runs it; loopkit's default rules hold it
SHELL_PATCH = (
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: .env.local\n+TOKEN=1\n*** End Patch\nEOF"
)


@pytest.fixture
def codex_loop(tmp_path: Path, codex_cli: Path, refusing_port: int) -> Any:
    def make(api: OpenAIApi) -> Loop:
        home = tmp_path / "home"
        (home / ".codex").mkdir(parents=True)
        # The user's Codex config: the fake as its model provider, no retries (a test).
        (home / ".codex" / "config.toml").write_text(
            'model = "gpt-fake"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
            f'name = "Fake"\nbase_url = "{api.url}/v1"\nenv_key = "FAKE_OPENAI_API_KEY"\n'
            'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        env = agent_env(home, codex_cli, refusing_port, CODEX_HOME=str(home / ".codex"),
                        FAKE_OPENAI_API_KEY=api.api_key)  # fmt: skip
        loop = Loop(tmp_path / "shop", env)
        (loop.ws / "TASKS.md").write_text("- [ ] tidy up\n")
        (loop.ws / "notes.txt").write_text("kept\n")
        loop.git("add", "-A")
        loop.git("commit", "-qm", "start")
        (loop.ws / "notes.txt").write_text("scratch edits to throw away\n")
        done = loop.lk("init", "--agent", "codex", "--task-file", "TASKS.md")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "trusted the project" in done.stdout and "trusted loopkit's hook" in done.stdout
        assert "notify" in (home / ".codex" / "config.toml").read_text()
        loop.setting("pause", '"0s"')
        return loop

    return make


def outputs(api: OpenAIApi, command: str) -> list[Any]:
    return [out for call, out in api.tool_calls()
            if json.loads(call.get("arguments") or "{}").get("cmd") == command]  # fmt: skip


def test_codex_asks_before_a_gated_call_and_runs_it_once_after(codex_loop: Any) -> None:
    script = [
        Call("exec_command", {"cmd": GATED}),
        Say("The reset waits for a human's approval."),
        Call("exec_command", {"cmd": GATED}),
        Call("exec_command", {"cmd": SHELL_PATCH}),
        Say("The token file waits for approval."),
    ]
    with OpenAIApi(script) as api:
        loop = codex_loop(api)
        doctor = loop.lk("doctor")
        assert "ok      trust: Codex runs loopkit's hook" in doctor.stdout, doctor.stdout

        first = loop.run()
        assert first.returncode == 2, first.stdout + first.stderr
        assert (loop.ws / "notes.txt").read_text().startswith("scratch")  # not before
        (request,) = loop.open_requests()
        assert request["prompt"] == f"Approve Codex's `{GATED}`?"
        (held,) = outputs(api, GATED)
        assert "waiting for a human's approval" in str(held)

        loop.reply(request["request_id"], "approve")
        second = loop.run()
        assert second.returncode == 2, second.stdout + second.stderr
        assert (loop.ws / "notes.txt").read_text() == "kept\n"  # ran, after the answer
        assert len(outputs(api, GATED)) == 2
        # The patch through the shell: held by [gate] protect, nothing written.
        assert not (loop.ws / ".env.local").exists()
        (patch,) = loop.open_requests()
        assert patch["prompt"] == "Approve Codex's `apply_patch .env.local`?"
        assert not api.rejected and not api.unforeseen

        # Changed, the hook is one Codex has not reviewed: it would not run it; doctor says so.
        hooks = loop.ws / ".codex" / "hooks.json"
        hooks.write_text(hooks.read_text().replace('"timeout": 600', '"timeout": 590'))
        doctor = loop.lk("doctor")
        assert doctor.returncode == 1
        assert "problem trust: Codex will not run loopkit's hook" in doctor.stdout
        assert "modified" in doctor.stdout
