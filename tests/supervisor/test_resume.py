"""The resume run's command line, its stdin, and when a session did not resume (SPEC §18)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from loopkit.agentresult import read_result
from loopkit.supervisor.resume import fill, not_resumed, with_stdin
from loopkit.supervisor.runner import Finished, argv_of

SESSION = "5a0c2d57-2f43-4f8e-9d43-0e0b6c1f1a2b"


def test_the_session_id_fills_the_template_and_the_prompt_is_the_commands_stdin(
    tmp_path: Path,
) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("loopkit: approved by ana: run `rm -rf build` again\n")
    shell = fill("cat; echo --resume {session_id}", SESSION)
    argv = fill(("sh", "-c", 'cat; echo "$0"', "{session_id}"), SESSION)
    for command in (shell, argv):
        done = subprocess.run(
            argv_of(with_stdin(command, prompt)),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
        )
        assert done.stdout.startswith("loopkit: approved by ana") and SESSION in done.stdout
    # A shell string gets the id quoted, whatever it is.
    assert fill("claude --resume {session_id}", "a b") == "claude --resume 'a b'"


def _result(**fields: object) -> str:
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "session_id": SESSION,
        "total_cost_usd": 0.01,
        "permission_denials": [],
    }
    return json.dumps({**base, **fields})


def test_what_counts_as_a_session_that_did_not_resume() -> None:
    ran = Finished("exited", 0, 0.1, "")
    failed = Finished("exited", 1, 0.1, "No conversation found with session ID: x")
    assert not_resumed(ran, read_result(_result()), SESSION) is None
    assert not_resumed(ran, None, SESSION) is None  # ran, printing no JSON: it resumed
    assert not_resumed(failed, None, SESSION) == "exit 1, no result"
    assert "not found" in str(
        not_resumed(Finished("not-started", None, 0, "", "not found"), None, SESSION)
    )
    gone = read_result(_result(is_error=True, stop_reason="tool_deferred_unavailable"))
    assert "tool_deferred_unavailable" in str(not_resumed(failed, gone, SESSION))
    early = read_result(_result(is_error=True, subtype="error_during_execution", num_turns=0))
    assert "before any turn" in str(not_resumed(failed, early, SESSION))
    other = read_result(_result(session_id="another-session"))
    assert "another-session" in str(not_resumed(ran, other, SESSION))
    # An error after turns is the agent's own failure, not a session that did not resume.
    assert (
        not_resumed(failed, read_result(_result(is_error=True, subtype="error_max_turns")), SESSION)
        is None
    )


def test_a_long_result_after_a_long_turn_is_read_whole() -> None:
    """The runner keeps 8 kB for error messages; Claude's result alone can be longer."""
    from loopkit.supervisor.resume import OutputTail

    written: list[bytes] = []

    class Log:
        def write(self, chunk: bytes, /) -> object:
            written.append(chunk)
            return None

    tail = OutputTail(Log())
    for _ in range(100):
        tail.write(b"working " * 1000 + b"\n")
    long = _result(result="x" * 50_000)
    for i in range(0, len(long), 4096):
        tail.write(long[i : i + 4096].encode())
    tail.write(b"\n")
    read = tail.result()
    assert read is not None and read.session_id == SESSION
    assert sum(map(len, written)) > 800_000  # everything went on to the log
    tail.write(b"and then some words\n")
    assert tail.result() is None
