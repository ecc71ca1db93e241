"""The live turn (SPEC §24) with the agents' CLIs as installed from the npm registry, against
fakes of their model APIs: a slow call watched while it runs, a message delivered into the
running turn of the same session, each runaway stopped within one call of its threshold and
asked about (the answer resuming the same session), and a healthy long turn never stopped.

Reproduce with ``.venv/bin/python -m pytest -q -n0 tests/agents/test_live_turn.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agentloop import TICKED, Loop, agent_env, claude_workspace
from anthropic_api import AnthropicApi
from gemini_api import GeminiApi
from openai_api import OpenAIApi
from wire import Call, Repeat, Say

from helpers import wait_until

SLOW = "while [ ! -f go ]; do sleep 0.1; done; echo released"
RESUMED = "loopkit stopped your last turn"  # what a resumed turn's message starts with
FINISH = [
    Call("Read", {"file_path": "TASKS.md"}),
    Call("Write", {"file_path": "TASKS.md", "content": TICKED}),
    Say("Done: the task is ticked."),
]


def bash(command: str, description: str = "a step") -> Call:
    return Call("Bash", {"command": command, "description": description})


@pytest.fixture
def claude_loop(tmp_path: Path, claude_cli: Path, refusing_port: int) -> Any:
    def make(api: AnthropicApi, **stuck: str) -> Loop:
        loop = claude_workspace(
            tmp_path / "shop", tmp_path / "home", claude_cli, refusing_port, api
        )
        if stuck:
            with open(loop.ws / "loopkit.toml", "a") as config:
                config.write("\n[stuck]\n" + "".join(f"{k} = {v}\n" for k, v in stuck.items()))
        return loop

    return make


def session_of(seen: Any) -> str:
    return str(json.loads(seen.body["metadata"]["user_id"])["session_id"])


def commands(api: AnthropicApi, command: str) -> int:
    """How many times the model's responses called Bash with ``command``."""
    return sum(
        1
        for seen in api.turns()
        if seen.step is not None
        and getattr(seen.step, "tool", None) == "Bash"
        and seen.step.input.get("command") == command  # type: ignore[union-attr]
    )


def asked(loop: Loop) -> dict[str, Any]:
    (request,) = loop.open_requests()
    return request


def test_a_slow_call_is_watched_and_a_message_reaches_the_same_turn(claude_loop: Any) -> None:
    script = [bash(SLOW, "Wait for the signal"), *FINISH]
    with AnthropicApi(script) as api:
        loop = claude_loop(api)
        run = loop.start("--max-iterations", "1")
        try:
            # ps shows the command while it runs (it waits for `go`, which comes only after).
            row = wait_until(loop.running_call, timeout=60, what="ps showing the running call")
            assert isinstance(row, dict)
            tool = row["live"]["tool"]
            assert tool["name"] == "Bash" and tool["input"]["command"] == SLOW
            assert row["live"]["agent"] == "claude" and row["live"]["takes_messages"]
            shown = loop.lk("ps").stdout
            assert f"shop: ▶ Bash: {SLOW} (for " in shown, shown
            status = json.loads(loop.lk("status", "--json").stdout)
            assert status["live"]["tool"]["input"]["command"] == SLOW

            told = loop.lk("say", "use the staging database")
            assert told.returncode == 0, told.stderr
            assert told.stdout.startswith(
                "shop: delivered into the running turn (claude, "
                f"session {row['live']['session_id']}"
            )
            tail = loop.lk("tail", "--no-follow", "-n", "5").stdout
            assert f"claude: → Bash: {SLOW}" in tail
            assert "via cli: use the staging database" in tail.splitlines()[-1]
        finally:
            (loop.ws / "go").touch()
        assert run.wait(timeout=120) == 0, loop.output()
        # The request after the slow call carries the message: the same turn, one session.
        turns = api.turns()
        assert "use the staging database" not in json.dumps(turns[0].body["messages"])
        assert "use the staging database" in json.dumps(turns[1].body["messages"])
        assert {session_of(t) for t in turns} == {session_of(turns[0])}
        assert (loop.ws / "TASKS.md").read_text() == TICKED
        assert loop.ps()["live"] is None  # the turn is over
        assert not api.rejected and not api.unforeseen


def test_a_call_repeated_is_stopped_asked_about_and_the_answer_resumes_the_session(
    claude_loop: Any,
) -> None:
    missing = "cat config/settings.yml"
    script = [Repeat([bash(missing, "Read the settings")], until=RESUMED), *FINISH]
    with AnthropicApi(script) as api:
        loop = claude_loop(api)  # [stuck] same_call = 5, the default
        first = loop.run()
        assert first.returncode == 2, loop.lk("tail", "--no-follow").stdout
        assert 5 <= commands(api, missing) <= 6  # within one call of the threshold
        request = asked(loop)
        assert request["trigger"] == "stuck-same-call"
        assert "same call 5 times in a row" in request["prompt"]
        blocked = (loop.ws / "BLOCKED.md").read_text()
        assert f"Bash: {missing}" in blocked and "Claude Code's own interrupt" in blocked
        assert "No such file or directory" in blocked  # what each call gave back

        loop.reply(request["request_id"], "A: the settings file is gone for good; tick the task")
        second = loop.run()
        assert second.returncode == 0, second.stdout + second.stderr
        turns = api.turns()
        assert {session_of(t) for t in turns} == {session_of(turns[0])}
        resumed = json.dumps(turns[-3].body["messages"][-1])
        assert RESUMED in resumed and "the settings file is gone for good" in resumed
        assert (loop.ws / "TASKS.md").read_text() == TICKED
        assert not api.rejected and not api.unforeseen


def test_two_calls_in_alternation_are_stopped(claude_loop: Any) -> None:
    a, b = "git status --short", "git diff --stat"
    script = [Repeat([bash(a), bash(b)], until=RESUMED), *FINISH]
    with AnthropicApi(script) as api:
        loop = claude_loop(api, ping_pong="3")
        first = loop.run()
        assert first.returncode == 2, loop.lk("tail", "--no-follow").stdout
        made = commands(api, a) + commands(api, b)
        assert 6 <= made <= 7  # 3 cycles of A then B, and at most one call more
        request = asked(loop)
        assert request["trigger"] == "stuck-ping-pong"
        assert f"> A: Bash: {a} ⇄ B: Bash: {b}" in (loop.ws / "BLOCKED.md").read_text()
        loop.reply(request["request_id"], "A: stop looking, tick the task")
        assert loop.run().returncode == 0
        assert not api.rejected and not api.unforeseen


def test_a_silent_turn_is_stopped_through_claude_and_its_command_with_it(
    claude_loop: Any,
) -> None:
    quiet = "sleep 600 # loopkit-test-silent"
    script = [bash(quiet, "Wait a long time"), Say("Stopped, as asked."), *FINISH]
    with AnthropicApi(script) as api:
        loop = claude_loop(api, silent='"8s"')
        first = loop.run()
        assert first.returncode == 2, loop.lk("tail", "--no-follow").stdout
        request = asked(loop)
        assert request["trigger"] == "stuck-silent"
        assert f"Bash: {quiet}" in (loop.ws / "BLOCKED.md").read_text()
        # Claude ran the command in a session of its own; its interrupt ended it.
        left = subprocess.run(["pgrep", "-f", "loopkit-test-silent"], capture_output=True)
        assert left.returncode == 1, left.stdout
        interrupted = [
            r
            for r in api.tool_results()
            if "interrupted" in json.dumps(r).lower() or "doesn't want to proceed" in json.dumps(r)
        ]
        assert interrupted or len(api.turns()) == 1  # Claude stopped at its call
        loop.reply(request["request_id"], "A: skip the wait, tick the task")
        assert loop.run().returncode == 0


def test_a_long_healthy_turn_of_distinct_calls_is_never_stopped(claude_loop: Any) -> None:
    steps: list[Call] = []
    for n in range(1, 9):  # tests run after each edit: the same call, never twice in a row
        steps += [bash(f"echo 'step {n}' >> notes.txt"), bash("cat notes.txt")]
    script = [*steps, *FINISH]
    with AnthropicApi(script) as api:
        loop = claude_loop(api, same_call="2", ping_pong="2", silent='"30s"')
        done = loop.run("--max-iterations", "1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert not loop.requests() and not loop.said("runaway")
        assert commands(api, "cat notes.txt") == 8
        assert (loop.ws / "TASKS.md").read_text() == TICKED


@pytest.fixture
def codex_loop(tmp_path: Path, codex_cli: Path, refusing_port: int) -> Any:
    def make(api: OpenAIApi) -> Loop:
        home = tmp_path / "home"
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text(
            'model = "gpt-fake"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
            f'name = "Fake"\nbase_url = "{api.url}/v1"\nenv_key = "FAKE_OPENAI_API_KEY"\n'
            'wire_api = "responses"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
        env = agent_env(
            home,
            codex_cli,
            refusing_port,
            CODEX_HOME=str(home / ".codex"),
            FAKE_OPENAI_API_KEY=api.api_key,
        )
        loop = Loop(tmp_path / "shop", env)
        (loop.ws / "TASKS.md").write_text("- [ ] tidy up\n")
        loop.git("add", "-A")
        loop.git("commit", "-qm", "start")
        done = loop.lk("init", "--agent", "codex", "--task-file", "TASKS.md")
        assert done.returncode == 0, done.stdout + done.stderr
        loop.setting("pause", '"0s"')
        return loop

    return make


def test_codex_is_watched_and_a_runaway_stopped_with_sigint(codex_loop: Any) -> None:
    missing = "cat config/settings.yml"
    script = [
        Call("exec_command", {"cmd": SLOW}),
        Repeat([Call("exec_command", {"cmd": missing})], until="never said"),
    ]
    with OpenAIApi(script) as api:
        loop = codex_loop(api)
        run = loop.start("--exit-on-block")
        try:
            row = wait_until(loop.running_call, timeout=60, what="ps showing Codex's command")
            assert isinstance(row, dict)
            assert row["live"]["agent"] == "codex" and not row["live"]["takes_messages"]
            assert SLOW in row["live"]["tool"]["input"]["command"]
            told = loop.lk("say", "the settings are gone")  # Codex takes none mid-turn
            assert told.stdout.strip() == (
                "shop: noted for its next agent run (codex takes no message mid-turn)"
            ), told.stdout
        finally:
            (loop.ws / "go").touch()
        assert run.wait(timeout=120) == 2, loop.output()
        made = sum(1 for seen in api.turns() if isinstance(seen.step, Call)) - 1
        assert 5 <= made <= 6  # within one call of same_call = 5
        request = asked(loop)
        assert request["trigger"] == "stuck-same-call"
        blocked = (loop.ws / "BLOCKED.md").read_text()
        assert missing in blocked and "Stopped with SIGINT" in blocked
        tail = loop.lk("tail", "--no-follow", "-n", "40").stdout
        assert "codex: → shell: " in tail and missing in tail
        assert not api.rejected


def test_say_without_a_turn_that_takes_it_is_a_note_and_says_so(
    claude_loop: Any, tmp_path: Path
) -> None:
    """A running supervisor whose agent is between turns (blocked here) makes the message a
    note for the next run, and says why."""
    script = [bash("rm -rf build", "Clean"), Say("Waiting for approval.")]
    with AnthropicApi(script) as api:
        loop = claude_loop(api)
        run = loop.start()
        try:
            wait_until(lambda: loop.open_requests(), timeout=60, what="the gated call asked")
            wait_until(lambda: loop.ps().get("state") == "blocked", timeout=30, what="blocked")
            told = loop.lk("say", "the staging database is down")
            assert told.stdout.strip() == (
                "shop: noted for its next agent run (no agent turn runs now)"
            ), told.stdout
            notes = list((loop.ws / ".loopkit" / "control" / "notes").iterdir())
            assert len(notes) == 1
        finally:
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=60)


@pytest.fixture
def gemini_loop(tmp_path: Path, gemini_cli: Path, refusing_port: int) -> Any:
    def make(api: GeminiApi) -> Loop:
        home = tmp_path / "home"
        (home / ".gemini").mkdir(parents=True)
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        }
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env = agent_env(
            home,
            gemini_cli,
            refusing_port,
            GEMINI_API_KEY=api.api_key,
            GOOGLE_GEMINI_BASE_URL=api.url,
        )
        loop = Loop(tmp_path / "shop", env)
        (loop.ws / "TASKS.md").write_text("- [ ] tidy up\n")
        done = loop.lk("init", "--agent", "gemini", "--task-file", "TASKS.md")
        assert done.returncode == 0, done.stdout + done.stderr
        loop.setting("pause", '"0s"')
        loop.git("add", "-A")
        loop.git("commit", "-qm", "start")
        return loop

    return make


def test_gemini_is_watched_and_a_runaway_stopped_without_an_interrupt_of_its_own(
    gemini_loop: Any,
) -> None:
    missing = "cat config/settings.yml"
    call = Call("run_shell_command", {"command": missing, "description": "Read the settings"})
    with GeminiApi([Repeat([call], until="never said")]) as api:
        loop = gemini_loop(api)
        # Gemini CLI stops a turn itself at its 4th identical call ("Loop detected"): below.
        with open(loop.ws / "loopkit.toml", "a") as config:
            config.write("\n[stuck]\nsame_call = 3\n")
        first = loop.run()
        assert first.returncode == 2, loop.lk("tail", "--no-follow").stdout
        made = sum(1 for seen in api.turns() if isinstance(seen.step, Call))
        assert 3 <= made <= 4  # within one call of same_call = 3
        request = asked(loop)
        assert request["trigger"] == "stuck-same-call"
        blocked = (loop.ws / "BLOCKED.md").read_text()
        assert f"run_shell_command: {missing}" in blocked and "Stopped with " in blocked
        tail = loop.lk("tail", "--no-follow", "-n", "40").stdout
        assert f"gemini: → run_shell_command: {missing}" in tail
        assert not api.rejected
