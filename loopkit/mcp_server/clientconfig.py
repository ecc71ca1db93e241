"""``loopkit mcp --print-config``: how an MCP client starts this server.

The project's ``.mcp.json`` entry (the format Claude Code, Cursor and others read) and the
``claude mcp add`` line that writes the same entry. The command names this very loopkit by
its absolute path, as the hooks do (:func:`loopkit.hooks.install.program`): a client starts
servers with a PATH of its own, where a bare ``loopkit`` may not be found. ``-C DIR`` is kept
when it was given (otherwise the client's working folder — the project — is found as every
command finds it).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from loopkit.hooks.install import program as loopkit_program

NAME = "loopkit"


def entry(workspace: Path | None = None, program: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` object with loopkit's server in it."""
    start = [program] if program else loopkit_program()
    args = ["-C", str(workspace), "mcp"] if workspace is not None else ["mcp"]
    server = {"type": "stdio", "command": start[0], "args": [*start[1:], *args], "env": {}}
    return {"mcpServers": {NAME: server}}


def _dumps(config: dict[str, Any]) -> str:
    """Indented JSON, with a list of strings on one line (``"args": ["mcp"]``)."""
    indented = json.dumps(config, indent=2)

    def one_line(match: re.Match[str]) -> str:
        return "[" + ", ".join(item.strip() for item in match.group(1).split(",\n")) + "]"

    return re.sub(r'\[\n((?:\s*"(?:[^"\\]|\\.)*",?\n)+?)\s*\]', one_line, indented)


def text(workspace: Path | None = None, program: str | None = None) -> str:
    """What ``--print-config`` prints: the .mcp.json entry, then the ``claude mcp add`` line."""
    config = entry(workspace, program)
    server = config["mcpServers"][NAME]
    argv = [server["command"], *server["args"]]
    add = ["claude", "mcp", "add", "--transport", "stdio", "--scope", "project", NAME, "--", *argv]
    return "\n".join(
        [
            "# .mcp.json at the project root (merge into its mcpServers if it exists):",
            _dumps(config),
            "",
            "# or let Claude Code write it:",
            shlex.join(add),
        ]
    )
