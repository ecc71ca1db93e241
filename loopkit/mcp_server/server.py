"""``loopkit mcp``: the stdio MCP server, on the official SDK's ``MCPServer``.

stdout carries the protocol and nothing else: the SDK's stdio transport serves the wire from
a private copy of fd 1 and points fd 1 itself at stderr, so a stray ``print`` or a channel's
subprocess can never corrupt it; loopkit's own events go to stderr and ``events.jsonl``.

A tool that refuses — a bad argument, a rubric violation, a conflict, an unknown request, any
:class:`~loopkit.errors.LoopkitError` — answers ``isError`` with the one-line message, and
the server keeps serving. A bug answers ``isError`` too (its traceback goes to events.jsonl).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ValidationError

from loopkit.errors import LoopkitError
from loopkit.log import get_logger
from loopkit.mcp_server.asking import AskingTools
from loopkit.mcp_server.reading import PROGRESS_EVERY, ReadingTools
from loopkit.mcp_server.workspace import ServedWorkspace
from loopkit.message import fold

log = get_logger("loopkit.mcp")

INSTRUCTIONS = (
    "loopkit asks one human one clear question when you are stuck and cannot decide: "
    "request_human_input (a question or an approval), request_human_review (a review), "
    "escalate (block the loop). Read the answer with get_human_request or wait_for_human; "
    "only a human answers. list_human_requests finds requests by status, kind or key."
)


def argument_problem(error: ValidationError) -> str:
    """A pydantic validation error as one line: each bad argument and what it must be."""
    parts = []
    for item in error.errors(include_url=False):
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg']}")
    return "invalid arguments: " + "; ".join(parts)


class LoopkitTool(Tool):
    """A tool whose refusals reach the client as their own one-line message.

    The SDK reports a tool's expected failure only when it is a ``ToolError``; anything else
    is withheld as "Error executing tool …". A :class:`LoopkitError` is loopkit's expected
    failure, so its message is what the client reads; so is a one-line account of
    arguments that do not match the input schema.
    """

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, LoopkitError):
                message = fold(str(cause), 1000)
            elif isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
                message = fold(argument_problem(cause), 1000)
            else:
                raise
            log.info("mcp_tool_refused", tool=self.name, msg=f"{self.name}: {message}")
            raise ToolError(message) from cause


def tools(
    served: ServedWorkspace, *, progress_every: float = PROGRESS_EVERY
) -> list[Callable[..., Any]]:
    """The tools, in the order clients list them (``progress_every``: seconds between a
    wait's progress notifications)."""
    asking, reading = AskingTools(served), ReadingTools(served, progress_every=progress_every)
    return [
        asking.request_human_input,
        asking.request_human_review,
        reading.list_human_requests,
        reading.get_human_request,
        reading.wait_for_human,
        asking.escalate,
    ]


def build(served: ServedWorkspace, *, progress_every: float = PROGRESS_EVERY) -> MCPServer[Any]:
    from importlib.metadata import version

    served_tools = tools(served, progress_every=progress_every)
    return MCPServer(
        "loopkit",
        version=version("loopkit"),
        instructions=INSTRUCTIONS,
        tools=[LoopkitTool.from_function(fn, structured_output=True) for fn in served_tools],
    )


def serve(served: ServedWorkspace) -> int:
    """Serve over stdin/stdout until the client closes stdin; 0 then."""
    logging.getLogger("mcp").setLevel(logging.WARNING)  # per-request chatter stays out
    if served.broken is not None:
        log.warning(
            "mcp_config_broken",
            msg=f"{served.broken}; every tool but escalate answers with this error until "
            "it is fixed and the server restarted",
        )
    server = build(served)
    log.debug("mcp_started", msg=f"mcp: serving {served.app.root} over stdio")
    anyio.run(server.run_stdio_async)
    return 0
