"""A workspace run as a user runs it, with an agent CLI in an environment of its own: the
helpers the real-agent tests share (their fixtures are in this folder's ``conftest``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from helpers import LOOPKIT, clean_env

# Variables of the developer's machine that would point a CLI elsewhere, or log it in.
FOREIGN = (
    "ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "HTTP_PROXY",
    "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
)  # fmt: skip


def agent_env(home: Path, binary: Path, refusing: int, **extra: str) -> dict[str, str]:
    """The environment a CLI runs in: a home of its own, nothing of the developer's."""
    env = {k: v for k, v in clean_env().items() if not k.startswith(FOREIGN)}
    proxy = f"http://127.0.0.1:{refusing}"
    env.update(
        HOME=str(home),
        PATH=f"{binary.parent}{os.pathsep}{env.get('PATH', os.defpath)}",
        HTTP_PROXY=proxy, HTTPS_PROXY=proxy, ALL_PROXY=proxy,
        http_proxy=proxy, https_proxy=proxy, all_proxy=proxy,
        NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
        NO_UPDATE_NOTIFIER="1", DO_NOT_TRACK="1", GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME="loopkit test", GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="loopkit test", GIT_COMMITTER_EMAIL="test@example.invalid",
    )  # fmt: skip
    env.update(extra)
    return env


def claude_workspace(ws: Path, home: Path, binary: Path, refusing: int, api: Any,
                     **extra: str) -> Loop:  # fmt: skip
    """``loopkit init --agent claude`` in a git workspace with a task and a build folder; the
    fake API's address and key in the environment (``ANTHROPIC_BASE_URL``)."""
    env = agent_env(
        home, binary, refusing,
        ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY=api.api_key,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1", DISABLE_ERROR_REPORTING="1", IS_SANDBOX="1",
        **extra,
    )  # fmt: skip
    home.mkdir(exist_ok=True)
    loop = Loop(ws, env)
    (loop.ws / "TASKS.md").write_text(TASKS)
    (loop.ws / "build").mkdir()
    (loop.ws / "build" / "out.o").write_text("old\n")
    done = loop.lk("init", "--agent", "claude", "--task-file", "TASKS.md")
    assert done.returncode == 0, done.stderr
    loop.setting("pause", '"0s"')
    loop.git("add", "-A")
    loop.git("commit", "-qm", "start")
    return loop


TASKS = "- [ ] clean the build\n"
TICKED = "- [x] clean the build\n"


class Loop:
    """A git workspace set up by ``loopkit init --agent …``, run as a user would."""

    def __init__(self, ws: Path, env: dict[str, str]) -> None:
        self.ws = ws
        self.env = env
        ws.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", *args], cwd=self.ws, env=self.env, capture_output=True,
                              text=True, check=True, timeout=60)  # fmt: skip
        return done.stdout

    def lk(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(LOOPKIT), "-C", str(self.ws), *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip

    def setting(self, key: str, value: str) -> None:
        """``key = value`` in ``[loop]`` (a line ``init`` wrote replaced, else added)."""
        import re

        path = self.ws / "loopkit.toml"
        text = path.read_text()
        line = f"{key} = {value}"
        fresh, n = re.subn(rf"(?m)^{re.escape(key)} = .*$", lambda _: line, text, count=1)
        if not n:
            fresh = text.replace("[loop]\n", f"[loop]\n{line}\n", 1)
        path.write_text(fresh)

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.lk("run", "--exit-on-block", *args, timeout=timeout)

    def start(self, *args: str) -> subprocess.Popen[str]:
        """``loopkit run ARGS`` in the background, its output in ``run.out`` beside the
        workspace (read it with :meth:`output`)."""
        out = open(self.ws.parent / "run.out", "w")  # noqa: SIM115 (the child holds it)
        try:
            return subprocess.Popen([str(LOOPKIT), "-C", str(self.ws), "run", *args],
                                    env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    text=True)  # fmt: skip
        finally:
            out.close()

    def output(self) -> str:
        return (self.ws.parent / "run.out").read_text()

    def ps(self) -> dict[str, Any]:
        """This loop's row in ``loopkit ps --json`` (empty before its first run registers it)."""
        done = self.lk("ps", "--json")
        assert done.returncode == 0, done.stderr
        rows = [r for r in json.loads(done.stdout) if r["workspace"] == str(self.ws)]
        return rows[0] if rows else {}

    def running_call(self) -> dict[str, Any] | None:
        """``ps``'s row once it shows a tool call running in the agent's turn, else None."""
        row = self.ps()
        return row if (row.get("live") or {}).get("tool") else None

    def requests(self) -> list[dict[str, Any]]:
        folder = self.ws / "requests"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]

    def open_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests() if r["status"] == "open"]

    def reply(self, request_id: str, words: str) -> subprocess.CompletedProcess[str]:
        done = self.lk("reply", "--request-id", request_id, "--reply", words, "--by", "ana")
        assert done.returncode == 0, done.stderr
        return done

    def events(self) -> list[dict[str, Any]]:
        path = self.ws / ".loopkit" / "events.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def said(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == event]
