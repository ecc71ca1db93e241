"""The ``loopkit`` group: the options every command takes, and the explicit list of its commands."""

from __future__ import annotations

from pathlib import Path

import click

from loopkit.app import App
from loopkit.cli import answer, ask, block, fleet, hook, inbox, loop, mcp, requests, setup
from loopkit.discover import NotAFolder, find_workspace
from loopkit.errors import UsageError

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.option(
    "-C",
    "--workspace",
    "workspace",
    default=None,
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Workspace folder (default: $LOOPKIT_WORKSPACE, else the nearest folder upward "
    "with loopkit.toml or .loopkit/, else the current folder).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show debug events on the console.")
@click.version_option(package_name="loopkit", prog_name="loopkit")
@click.pass_obj
def root(app: App, workspace: Path | None, verbose: bool) -> None:
    """Supervise an AI coding-agent loop; when it is stuck, ask one human one clear question.

    \b
    Exit codes: 0 ok · 1 failure · 2 blocked · 3 aborted · 4 conflict · 64 usage
    65 bad input · 66 no such request or task · 77 an agent answering · 78 config error
    130/143 interrupted.
    """
    app.explicit = workspace
    try:
        app.root = Path(find_workspace(None if workspace is None else str(workspace)))
    except NotAFolder as exc:
        raise UsageError(str(exc)) from None
    app.verbose = verbose


# The commands, listed here and nowhere else (no registration as an import side effect).
COMMANDS = (*block.COMMANDS, *loop.COMMANDS, *inbox.COMMANDS, *ask.COMMANDS, *answer.COMMANDS,
            *requests.COMMANDS, *setup.COMMANDS,
            *hook.COMMANDS, *mcp.COMMANDS, *fleet.COMMANDS)  # fmt: skip
for command in COMMANDS:
    root.add_command(command)
