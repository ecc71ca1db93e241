"""``mcp``: the MCP server over stdio (SPEC section 12), or ``--print-config``."""

from __future__ import annotations

import click

from loopkit.errors import EXIT_OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.command("mcp")
@click.option(
    "--print-config", is_flag=True, help="Print the .mcp.json entry and the `claude mcp add` line."
)
@click.pass_obj
def mcp(app: App, print_config: bool) -> int:
    """Serve loopkit's tools to an MCP client (Claude Code, Cursor, …) over stdin/stdout.

    \b
    Tools: request_human_input, request_human_review, list_human_requests,
    get_human_request, wait_for_human, escalate. They only ask: a human answers.
    stdout carries the protocol only; logs go to stderr and .loopkit/events.jsonl.
    """
    if print_config:
        from loopkit.mcp_server.clientconfig import text

        click.echo(text(app.root if app.explicit is not None else None))
        return EXIT_OK
    from loopkit.mcp_server.server import serve
    from loopkit.mcp_server.workspace import ServedWorkspace

    app.long_running = True
    return serve(ServedWorkspace.start(app))
