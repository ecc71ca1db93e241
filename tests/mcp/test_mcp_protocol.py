"""``loopkit mcp`` on the wire and around it: stdout carries JSON-RPC and nothing else (a
client speaking the 2025-06-18 handshake by hand), ``--print-config``, and no other command
importing the SDK."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

from helpers import LOOPKIT, clean_env, lk


def _send(proc: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[str], lines: list[str], request_id: int) -> dict[str, Any]:
    """Read stdout up to the response to ``request_id``; every line read is kept."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, f"stdout closed before the answer to {request_id}"
        lines.append(line)
        message = json.loads(line)
        if message.get("id") == request_id:
            assert isinstance(message, dict)
            return message


def test_stdout_carries_only_the_protocol(ws: Path, tmp_path: Path) -> None:
    """A channel loopkit does not know is logged (on stderr) at every escalation; refusals are
    logged too; stdout still holds JSON-RPC messages and nothing else."""
    err = tmp_path / "mcp.err"
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            [str(LOOPKIT), "-v", "mcp"], cwd=ws, text=True, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, env=clean_env(LOOPKIT_HITL_CHANNEL="bogus"),
        )  # fmt: skip
    lines: list[str] = []
    try:
        _send(proc, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "by-hand", "version": "0"},
        }})  # fmt: skip
        hello = _answer(proc, lines, 1)
        assert hello["result"]["serverInfo"]["name"] == "loopkit"
        assert hello["result"]["protocolVersion"] == "2025-06-18"
        _send(proc, {"method": "notifications/initialized"})
        assert proc.stdin is not None
        proc.stdin.write('this is not JSON\n{"jsonrpc": "2.0", "id": 99}\n')  # garbage
        calls = [
            ("escalate", {"question": "Which flow?", "context": "c", "attempted": ["a"],
                          "choices": ["A — one", "B — two"]}),
            ("escalate", {"question": "Again?", "context": "c", "attempted": ["a"],
                          "choices": ["A — one"]}),
            ("list_human_requests", {"status": "nope"}),
            ("get_human_request", {"request_id": "missing"}),
            ("request_human_input", {"situation": "Which flow?", "policy": "", "options": "A"}),
        ]  # fmt: skip
        results = []
        for number, (tool, arguments) in enumerate(calls, start=2):
            params = {"name": tool, "arguments": arguments}
            _send(proc, {"id": number, "method": "tools/call", "params": params})
            results.append(_answer(proc, lines, number)["result"])
        assert [r.get("isError", False) for r in results] == [False, False, True, True, True]
        assert results[0]["structuredContent"]["blocked"] is True
        assert json.loads(results[0]["content"][0]["text"]) == results[0]["structuredContent"]
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # the client goes: the server ends
        rest = proc.stdout.read()
        proc.stdout.close()
        code = proc.wait(timeout=15)
    assert code == 0
    lines.extend(rest.splitlines(keepends=True))
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    logged = err.read_text().splitlines()
    assert any("bogus" in line for line in logged)  # the warnings went to stderr …
    stdout = "".join(lines)
    assert not [line for line in logged if line in stdout]  # … and none of them to stdout
    assert (ws / ".loopkit" / "events.jsonl").exists()


def test_print_config_prints_the_mcp_json_entry_and_the_claude_line(ws: Path) -> None:
    done = lk(ws, "mcp", "--print-config")
    assert done.returncode == 0, done.stderr
    comments = [line for line in done.stdout.splitlines() if line.startswith("#")]
    assert len(comments) == 2
    body, _, claude = done.stdout.partition("# or let Claude Code write it:")
    entry = json.loads("\n".join(line for line in body.splitlines() if not line.startswith("#")))
    server = entry["mcpServers"]["loopkit"]
    assert server["type"] == "stdio" and server["args"] == ["-C", str(ws), "mcp"]
    assert server["command"] == str(LOOPKIT)  # absolute: a client's PATH may lack it
    assert shlex.split(claude.strip()) == [
        "claude", "mcp", "add", "--transport", "stdio", "--scope", "project", "loopkit",
        "--", server["command"], *server["args"],
    ]  # fmt: skip

    plain = subprocess.run(
        [str(LOOPKIT), "mcp", "--print-config"], cwd=ws, env=clean_env(), capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert '"args": ["mcp"]' in plain.stdout  # no -C: the client's folder is the project

    # Even with loopkit on PATH it names this one by its absolute path, as docs/mcp.md shows
    # (the page's /home/ana/.venv/bin/loopkit is where this one is).
    on_path = clean_env(PATH=f"{LOOPKIT.parent}:/usr/bin:/bin")
    found = subprocess.run(
        ["loopkit", "mcp", "--print-config"], cwd=ws, env=on_path, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    page = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text()
    page = page.replace("/home/ana/.venv/bin/loopkit", str(LOOPKIT))
    section = page.split("## Add it to a client", 1)[1]
    json_block = section.split("```json\n", 1)[1].split("```", 1)[0]
    sh_block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert json_block in found.stdout
    assert found.stdout.rstrip("\n").endswith(sh_block.rstrip("\n"))
    assert not (ws / ".loopkit").exists()


def test_no_other_command_imports_the_sdk(ws: Path) -> None:
    script = (
        "import sys\n"
        "from loopkit.cli.invoke import run\n"
        f"code = run(['-C', {str(ws)!r}, 'requests', '--json'])\n"
        "loaded = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'pydantic'))]\n"
        "print(code, loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=clean_env(), capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "0 []"


def test_the_schemas_enums_are_the_domains() -> None:
    from loopkit.escalation.policy import CATEGORIES
    from loopkit.mcp_server.models import Category, Outcome
    from loopkit.requests.outcome import EXIT_BY_OUTCOME

    assert get_args(Category) == CATEGORIES
    assert set(get_args(Outcome)) == set(EXIT_BY_OUTCOME)
