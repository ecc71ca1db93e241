"""``wait_for_human`` in process: loopkit's MCP server (``build``) on the SDK's in-memory
transport, its progress notifications every ``progress_every`` instead of every 10 s, so the
test waits a fraction of a second for what the stdio server does in ten. The wire itself
(stdio, the installed ``loopkit mcp``) is tested in ``test_mcp_tools.py``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from loopkit import log as events
from loopkit.commands.app import App
from loopkit.mcp_server.reading import MAX_WAIT
from loopkit.mcp_server.server import build
from loopkit.mcp_server.workspace import ServedWorkspace
from loopkit.redact import Redactor

from helpers import LOOPKIT, clean_env, record

EVERY = 0.2  # seconds between progress notifications here (PROGRESS_EVERY in the server)
INPUT = {"situation": "Which checkout flow should the new page use?", "policy": "Ask on UX."}


@pytest.fixture
def served(ws: Path) -> Any:
    try:
        yield ServedWorkspace.start(App(root=ws))
    finally:
        events.setup(None, Redactor(), console=False)  # no handlers left for other tests


async def ok(client: Client, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments, **kw)
    assert not result.is_error, f"{tool}: {result.content}"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_a_wait_reports_progress_and_returns_the_answer_given_from_the_cli(
    ws: Path, served: ServedWorkspace
) -> None:
    """A wait of 50 s: its first progress notification (after one interval) shows it is
    waiting; then a human answers with ``loopkit reply`` from a terminal, and the wait
    returns that answer."""
    progress: list[tuple[float, float | None, str | None]] = []
    result: list[dict[str, Any]] = []
    timing: list[float] = []

    async def main() -> None:
        waiting = anyio.Event()

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))
            waiting.set()

        with anyio.fail_after(45):
            async with Client(build(served, progress_every=EVERY)) as client:
                asked = await ok(client, "request_human_input", INPUT)
                request_id = asked["request_id"]

                async def wait() -> None:
                    arguments = {"request_id": request_id}  # wait_seconds: the default, 50
                    result.append(
                        await ok(client, "wait_for_human", arguments, progress_callback=on_progress)
                    )

                started = time.monotonic()
                async with anyio.create_task_group() as group:
                    group.start_soon(wait)
                    await waiting.wait()
                    reply = [str(LOOPKIT), "-C", str(ws), "reply", "--request-id", request_id,
                             "--reply", "A"]  # fmt: skip
                    done = await anyio.run_process(reply, env=clean_env(), check=False)
                    assert done.returncode == 0, done.stderr
                timing.append(time.monotonic() - started)

    anyio.run(main)
    [elapsed] = timing
    assert EVERY <= elapsed < 30  # woken by the answer, not by the end of the 50 s
    [waited] = result
    request_id = waited["request_id"]
    assert progress[0][:2] == (pytest.approx(EVERY), MAX_WAIT)
    assert request_id in str(progress[0][2])
    # One notification per interval, counting up, each naming the request.
    assert [done for done, _, _ in progress] == pytest.approx(
        [EVERY * n for n in range(1, len(progress) + 1)]
    )
    assert all(total == MAX_WAIT and request_id in str(text) for _, total, text in progress)
    assert waited["status"] == "resolved" and waited["outcome"] == "chosen"
    resolution = record(ws, request_id)["resolution"]
    assert waited["parsed_decision"] == resolution["parsed_decision"]  # type: ignore[index]
    assert resolution["via"] == "cli"  # type: ignore[index]  # answered by the human, not the tool
