"""An agent spoken with on its standard streams (SPEC section 23), with real subprocesses:
the runner hands a conversation the child's stdin and stdout; what the agent left running
when it exited gets a moment to finish (Claude Code starts its StopFailure hook and exits
without waiting for it) — and only that moment."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.supervisor.claudestream import ClaudeStream, speaks_stream_json
from loopkit.supervisor.containment import Containment
from loopkit.supervisor.eventstream import EventStream
from loopkit.supervisor.runner import AgentInput, Runner
from loopkit.watch.wake import Wake

# A stand-in for `claude -p --input-format stream-json …`: one user message in, a
# can_use_tool request out, its answer in, a result out, then it waits for stdin to close.
AGENT = r"""
import json, sys
def out(o): sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
user = json.loads(sys.stdin.readline())
out({"type": "system", "subtype": "init", "session_id": "s-1", "permissionMode": "default"})
sys.stderr.write("a warning on stderr\n"); sys.stderr.flush()
out({"type": "control_request", "request_id": "r1",
     "request": {"subtype": "can_use_tool", "tool_name": "Bash",
                 "input": {"command": "npm test"}}})
answer = json.loads(sys.stdin.readline())
out({"type": "assistant", "message": {"content": [
    {"type": "text", "text": "asked: " + user["message"]["content"]}]}})
out({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
     "session_id": "s-1", "total_cost_usd": 0.01,
     "result": json.dumps(answer["response"]["response"])})
assert sys.stdin.read() == ""  # ends when loopkit closes its stdin
"""


class Dialogs:
    def __init__(self) -> None:
        self.asked: list[str] = []
        self.requests: list[tuple[dict[str, Any], str | None]] = []

    def can_use_tool(self, request: dict[str, Any], session_id: str | None) -> dict[str, Any]:
        self.requests.append((request, session_id))
        return {"behavior": "deny", "message": "not now", "interrupt": True}


def runner() -> Runner:
    return Runner(wake=Wake(), stop=threading.Event(), kill_grace=2.0,
                  containment=Containment(cgroups=False))  # fmt: skip


class Log:
    def __init__(self) -> None:
        self.data = b""

    def write(self, chunk: bytes) -> None:
        self.data += chunk


def test_the_conversation_gets_stdout_and_writes_stdin_and_stderr_goes_to_the_log(
    tmp_path: Path,
) -> None:
    dialogs = Dialogs()
    stream = ClaudeStream("tick the task", dialogs)  # type: ignore[arg-type]
    log = Log()
    agent = (sys.executable, "-c", AGENT)
    done = runner().run(agent, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"}, timeout=60,
                        log=log, conversation=stream)  # fmt: skip
    assert done.ok, done.tail
    ((request, session),) = dialogs.requests
    assert request["tool_name"] == "Bash" and session == "s-1"
    assert stream.result is not None and stream.result.session_id == "s-1"
    said = log.data.decode()
    assert "a warning on stderr" in said  # stderr: the log, as before
    assert "claude: asked: tick the task" in said  # stdout: the turn as text, not raw JSON
    assert "claude: Bash: not now" in said and '"type"' not in said
    assert "claude: result: success after 1 turn(s), $0.0100" in said
    assert "claude: result" in done.tail


def test_an_agent_that_never_reads_its_stdin_stalls_nothing(tmp_path: Path) -> None:
    class Flood:
        writes = True
        ending = False

        def opened(self, stdin: AgentInput, say: Any, signal_group: Any = None) -> None:
            stdin.write(b"x" * (4 << 20))  # far more than a pipe holds

        def received(self, chunk: bytes) -> None:
            pass

        def output(self) -> None:
            pass

        def due(self) -> float | None:
            return None

        def tick(self) -> None:
            pass

        def closed(self) -> None:
            pass

    done = runner().run("echo ready", cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"},
                        timeout=30, conversation=Flood())  # fmt: skip
    assert done.ok and done.duration < 30


def test_what_the_agent_left_running_may_finish_writing_then_is_stopped(tmp_path: Path) -> None:
    """A hook started by the agent as it exits writes its file within the linger; a process
    that would run on for long is still stopped once it is over."""
    script = (
        f"(sleep 0.3; echo written > {tmp_path}/hook.txt) & (sleep 60; touch {tmp_path}/late) &"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = runner().run(script, cwd=str(tmp_path), env=env, timeout=30, linger=2.0)
    assert done.ok
    assert (tmp_path / "hook.txt").read_text() == "written\n"
    assert not (tmp_path / "late").exists() and done.duration < 10
    # Without the linger, as before: what is left is stopped at once.
    (tmp_path / "hook.txt").unlink()
    runner().run(script, cwd=str(tmp_path), env=env, timeout=30)
    assert not (tmp_path / "hook.txt").exists()


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_events_are_the_same_however_the_bytes_arrive(data: st.DataObject) -> None:
    events = data.draw(st.lists(st.dictionaries(st.sampled_from(["type", "text", "n"]),
                                                st.text(max_size=20) | st.integers()),
                                min_size=1, max_size=8))  # fmt: skip
    raw = b"".join(json.dumps(e).encode() + b"\n" for e in events) + b"not json\n"
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=10)))
    got: list[dict[str, Any]] = []
    text: list[bytes] = []
    stream = EventStream(text.append)
    stream.listen(got.append)
    for start, end in zip([0, *cuts], [*cuts, len(raw)], strict=True):
        stream.feed(raw[start:end])
    stream.end()
    assert got == events and text == [b"not json\n"]


def test_only_a_command_that_reads_stream_json_is_spoken_with() -> None:
    kit = "claude -p --input-format stream-json --output-format stream-json --verbose"
    assert speaks_stream_json(kit)
    assert speaks_stream_json(("claude", "-p", "--input-format=stream-json"))
    assert not speaks_stream_json("claude -p 'say --input-format stream-json' --output-format json")
    assert not speaks_stream_json("claude -p hi --output-format stream-json --verbose")
    assert not speaks_stream_json("claude -p 'unbalanced")
    assert not speaks_stream_json(None)
