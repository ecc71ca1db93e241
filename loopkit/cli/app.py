"""The ``loopkit`` group: the options every command takes, and the explicit list of its commands.

A command's module is imported only when that command runs (or its own ``--help`` is asked
for), so each command pays for its own libraries and no other's (SPEC §20); the group's
``--help`` lists every command from the short help in :data:`COMMANDS`, importing none.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import click

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.app import App

# The commands, listed here and nowhere else (no registration as an import side effect):
# name → ("module:attribute", the first paragraph of its help, shown by ``loopkit --help``).
# tests/cli/test_commands.py checks each entry against the command it names.
COMMANDS: dict[str, tuple[str, str]] = {
    "ask": (
        "loopkit.cli.ask:ask",
        "Decide whether a human is needed and, if so, compose one mobile-first question.",
    ),
    "check": (
        "loopkit.cli.block:check",
        "Exit 2 and print the head of BLOCKED.md when blocked; exit 0 otherwise.",
    ),
    "dismiss": (
        "loopkit.cli.answer:dismiss",
        "Close an open request nobody will answer (status dismissed), from any folder.",
    ),
    "doctor": (
        "loopkit.cli.setup:doctor",
        "Check the config, the channel settings and the template; each problem with its fix.",
    ),
    "escalate": ("loopkit.cli.block:escalate", "Block the loop and ask the human (exit 2)."),
    "fleet": (
        "loopkit.cli.fleet:fleet",
        "Share one human's requests, answers and bot across machines (PostgreSQL).",
    ),
    "gate": (
        "loopkit.cli.ask:gate",
        "Run COMMAND only once a human approved this exact command (argv + folder).",
    ),
    "hook": (
        "loopkit.cli.hook:hook",
        "Agent hooks: gate destructive tool calls on a human's approval (SPEC §12, §18).",
    ),
    "inbox": (
        "loopkit.cli.inbox:inbox",
        "Every open question of this machine's loops, oldest first, from any folder.",
    ),
    "init": (
        "loopkit.cli.setup:init",
        "Write loopkit.toml and templates/BLOCKED.md.j2; existing files are kept unless --force.",
    ),
    "mcp": (
        "loopkit.cli.mcp:mcp",
        "Serve loopkit's tools to an MCP client (Claude Code, Cursor, …) over stdin/stdout.",
    ),
    "note": (
        "loopkit.cli.loops:note_command",
        "Guidance for a loop's next agent run, without a question: it gets LOOPKIT_GUIDANCE.",
    ),
    "pause": (
        "loopkit.cli.loops:pause",
        "Pause a loop after its running iteration; no question is sent.",
    ),
    "ps": (
        "loopkit.cli.loops:ps",
        "Every loop of this machine (with a fleet, of every machine): state, task, verify, spend.",
    ),
    "reply": (
        "loopkit.cli.answer:reply",
        "Record a human's answer to a request and print the decision as JSON.",
    ),
    "requests": (
        "loopkit.cli.requests:requests",
        "List requests (oldest first). `requests show ID` is the one true read.",
    ),
    "resend": (
        "loopkit.cli.block:resend",
        "Send the open block's message again now (exit 0 sent, 1 failed, 66 no open block).",
    ),
    "resume": ("loopkit.cli.loops:resume", "Resume a paused loop (REPO as for `pause`)."),
    "run": (
        "loopkit.cli.loop:run",
        "Supervise the loop: agent, verify, escalate when stuck, resume when answered.",
    ),
    "send-test": (
        "loopkit.cli.setup:send_test",
        "Send one test message over the configured channel (exit 0 sent, 1 not).",
    ),
    "serve": (
        "loopkit.cli.inbox:serve",
        "The per-user daemon: answers from the phone for every registered loop.",
    ),
    "status": (
        "loopkit.cli.loop:status",
        "Show the supervisor's state: running / blocked / finished, iteration, task, request.",
    ),
    "stop": (
        "loopkit.cli.loops:stop",
        "Stop a loop's supervisor, as SIGTERM does (REPO as for `pause`; exit 1: none runs).",
    ),
    "tasks": (
        "loopkit.cli.loop:tasks",
        "The tasks left in [loop] task_file; with --done, exit 0 once none is left.",
    ),
    "unblock": (
        "loopkit.cli.answer:unblock",
        "Resolve the open block's request and remove BLOCKED.md.",
    ),
    "unskip": (
        "loopkit.cli.loop:unskip",
        "Take back a skipped task: the loop works on it again when it is the first open one.",
    ),
}


def load_command(name: str) -> click.Command | None:
    """The command ``name`` (its module imported now), or None when there is no such command."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    module, _, attribute = entry[0].partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


class LazyGroup(click.Group):
    """A group whose commands come from :data:`COMMANDS`, each imported on use."""

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
    65 bad input · 66 no such request or task · 77 an agent answering · 78 config error
    130/143 interrupted.
    """
    app.locate(workspace, verbose=verbose)
