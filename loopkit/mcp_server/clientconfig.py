"""``loopkit mcp --print-config``: how an MCP client starts this server.

The project's ``.mcp.json`` entry (the format Claude Code, Cursor and others read) and the
``claude mcp add`` line that writes the same entry. The command is ``loopkit`` when that is
the ``loopkit`` on PATH, else this one's absolute path; ``-C DIR`` is kept when it was given
(otherwise the client's working folder — the project — is found as every command finds it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

NAME = "loopkit"


def command() -> str:
    """``loopkit`` when PATH finds this very executable, else its absolute path."""
    me = Path(sys.argv[0])
    if me.name != "loopkit" or not me.exists():
        return "loopkit"
    on_path = shutil.which("loopkit")
    if on_path and os.path.samefile(on_path, me):
        return "loopkit"
    return str(me.resolve())


def entry(workspace: Path | None = None, program: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` object with loopkit's server in it."""
    args = ["-C", str(workspace), "mcp"] if workspace is not None else ["mcp"]
    server = {"type": "stdio", "command": program or command(), "args": args, "env": {}}
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
