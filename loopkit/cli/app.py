"""The ``loopkit`` group: the options every command takes, and the explicit list of its commands.

A command's module is imported only when that command runs (or its own ``--help`` is asked
for), so each command pays for its own libraries and no other's (SPEC §20); the group's
``--help`` lists every command from the short help in the generated
:data:`~loopkit.cli.commandtable.COMMANDS`, importing none.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from loopkit.cli.commandtable import COMMANDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App

# The commands, listed here and nowhere else (no registration as an import side effect):
# where each lives. Each command's name, help and options are its click declaration;
# docs/generate.py derives from them the table the group lists (and the fast path parses)
# without importing any command: loopkit/cli/commandtable.py.
PLACES: tuple[str, ...] = (
    "loopkit.cli.ask:ask",
    "loopkit.cli.records:audit",
    "loopkit.cli.block:check",
    "loopkit.cli.answer:dismiss",
    "loopkit.cli.setup:doctor",
    "loopkit.cli.block:escalate",
    "loopkit.cli.fleet:fleet",
    "loopkit.cli.ask:gate",
    "loopkit.cli.hook:hook",
    "loopkit.cli.inbox:inbox",
    "loopkit.cli.setup:init",
    "loopkit.cli.mcp:mcp",
    "loopkit.cli.loops:note_command",
    "loopkit.cli.loops:pause",
    "loopkit.cli.loops:ps",
    "loopkit.cli.answer:reply",
    "loopkit.cli.requests:requests",
    "loopkit.cli.block:resend",
    "loopkit.cli.loops:resume",
    "loopkit.cli.records:rules",
    "loopkit.cli.loop:run",
    "loopkit.cli.loops:say_command",
    "loopkit.cli.setup:send_test",
    "loopkit.cli.inbox:serve",
    "loopkit.cli.loop:status",
    "loopkit.cli.loops:stop",
    "loopkit.cli.loops:tail_command",
    "loopkit.cli.loop:tasks",
    "loopkit.cli.answer:unblock",
    "loopkit.cli.loop:unskip",
)


def load_command(name: str) -> click.Command | None:
    """The command ``name`` (its module imported now), or None when there is no such command."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    module, _, attribute = entry[0].partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


class LazyGroup(click.Group):
    """A group whose commands come from the generated table, each imported on use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_command(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's own listing, from the short help in the table: no command is imported."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=LazyGroup, context_settings=CONTEXT)
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
    65 bad input · 66 no such request or task · 75 recorded here only (fleet unreachable)
    77 an agent answering · 78 config error · 130/143 interrupted.
    """
    app.locate(workspace, verbose=verbose)
