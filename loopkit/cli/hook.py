"""``hook``: the agents' hooks — Claude Code's, Codex's and Gemini CLI's gate, notifications,
and their install."""

from __future__ import annotations

import json
import sys

import click

from loopkit.cli.body import runs_hook
from loopkit.errors import EXIT_OK, WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.group()
def hook() -> None:
    """Agent hooks: gate destructive tool calls on a human's approval (SPEC §12, §18).

    \b
    Set up:  loopkit hook install claude   (.claude/settings.json; --user for ~/.claude)
             loopkit hook install codex    (.codex/hooks.json, notify in ~/.codex/config.toml)
             loopkit hook install gemini   (.gemini/settings.json)
    """


@hook.group()
def claude() -> None:
    """The hook commands Claude Code runs (JSON on stdin)."""


@claude.command()
@click.pass_obj
@runs_hook("loopkit.hooks.pretooluse:main")
def pretooluse() -> None:
    """Before each tool call: a call that matches [gate] rules or [gate] protect waits for a
    human's approval of that exact call; any other call goes ahead (exit 0, no output).

    A matched call gets Claude Code's decision JSON on stdout (exit 0); anything wrong with a
    matched call (a broken [gate] table, unreadable input) denies it: exit 2, one line on
    stderr.
    """


@claude.command()
@click.pass_obj
def notification(app: App) -> int:
    """Permission and idle notifications go to the phone as one line (at most one per
    session every 10 minutes). Never fails the hook."""
    try:
        event = json.loads(sys.stdin.buffer.read(1 << 20))
        if not isinstance(event, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        click.echo(f"loopkit: notification hook: cannot read stdin ({exc}); ignored", err=True)
        return EXIT_OK
    return _notify(app, event)


def _notify(app: App, event: dict[str, object], agent: str = "Claude Code") -> int:
    from loopkit import config as config_mod
    from loopkit import log
    from loopkit.hooks.notify import notify
    from loopkit.redact import Redactor

    config = config_mod.load(app.root, lenient=True)
    log.setup(app.root / ".loopkit" / "events.jsonl", Redactor(config.channels.secrets()),
              stream=sys.stderr, console_level="warning")  # fmt: skip
    try:
        outcome = notify(str(app.root), event, agent=agent)
    except Exception as exc:  # a notification must never fail the agent's turn
        outcome = f"failed: {exc}"
    click.echo(f"loopkit: notification {outcome}", err=True)
    return EXIT_OK


@claude.command("permission-request")
@click.pass_obj
@runs_hook("loopkit.hooks.permission:main")
def permission_request() -> None:
    """Claude's permission dialog, asked on the phone and in the inbox: Allow / Deny, and
    "Always allow" when Claude offers a rule. Waits up to [hooks] wait; no answer: no
    decision (Claude's own dialog stands). Always exits 0."""


@claude.command("stop-failure")
@click.pass_obj
@runs_hook("loopkit.hooks.stopfailure:main")
def stop_failure() -> None:
    """Claude's turn ended on an API error: recorded for `loopkit run` (a rate limit waits
    as a dependency down; a failed login or billing asks at once). Always exits 0."""


@hook.group()
def codex() -> None:
    """The hook commands Codex runs (PreToolUse: JSON on stdin; notify: JSON argument)."""


@codex.command("pretooluse")
@click.pass_obj
@runs_hook("loopkit.hooks.codex:main")
def codex_pretooluse() -> None:
    """Before each tool call: the gate, in Codex's words. A gated call is denied with its
    reason (Codex has no "ask": waiting is a deny saying so) until a human approves it; an
    approved call goes ahead once. Any other call: exit 0, no output."""


@codex.command("notify")
@click.argument("payload", required=False, default="")
@click.pass_obj
def codex_notify(app: App, payload: str) -> int:
    """Codex's notify program: agent-turn-complete goes to the phone as one line (at most
    one per session every 10 minutes; not under `loopkit run`). Never fails."""
    from loopkit.hooks.codex import notice

    try:
        given = json.loads(payload)
        event = notice(given) if isinstance(given, dict) else None
    except ValueError:
        event = None
    if event is None:
        click.echo("loopkit: codex notify: not an agent-turn-complete payload; ignored", err=True)
        return EXIT_OK
    from loopkit import agentsession

    if agentsession.inside():
        click.echo("loopkit: codex notify: under loopkit run the loop tells the human", err=True)
        return EXIT_OK
    return _notify(app, event, agent="Codex")


@hook.group()
def gemini() -> None:
    """The hook commands Gemini CLI runs (JSON on stdin)."""


@gemini.command("beforetool")
@click.pass_obj
@runs_hook("loopkit.hooks.gemini:main")
def gemini_beforetool() -> None:
    """Before each tool call: the gate, in Gemini CLI's words ({"decision": "deny",
    "reason": …} until a human approves the call; approved: allowed once). Any other call:
    exit 0, no output."""


@hook.command()
@click.argument("agent", type=click.Choice(["claude", "codex", "gemini"]))
@click.option("--user", is_flag=True, help="Into your home folder's settings (every project).")
@click.pass_obj
def install(app: App, agent: str, user: bool) -> int:
    """Merge loopkit's hooks into the agent's settings: idempotent, other hooks kept.

    \b
    claude: .claude/settings.json (PreToolUse, Notification, PermissionRequest, StopFailure)
    codex:  .codex/hooks.json (PreToolUse), notify in ~/.codex/config.toml (where Codex
            reads it), and Codex asked to trust the project and loopkit's hook
    gemini: .gemini/settings.json (BeforeTool, timeout in milliseconds), and the folder
            added to Gemini CLI's trusted folders (it runs a folder's hooks only there)

    The commands name this loopkit by its absolute path (a hook the agent cannot find
    exits 127, and the agent lets the call through); loopkit's entries written before
    are updated to it. `loopkit doctor` runs each one.
    """
    if agent != "claude":
        from loopkit.hooks.agentconfig import install as install_agent

        lines = install_agent(agent, app.root, user=user)
        for line in lines:
            click.echo(line)
        if not lines:
            click.echo(f"{agent}: loopkit's hooks are there already; nothing changed")
        if agent == "codex":
            from loopkit.hooks.codextrust import trust as trust_codex

            for line in trust_codex(app.root):
                click.echo(line)
        if agent == "gemini" and not user:
            from loopkit.hooks import geminitrust

            try:
                trusted = geminitrust.arrange(app.root.resolve())
            except (OSError, ValueError) as exc:
                raise WorkspaceError(f"cannot trust this folder in Gemini CLI: {exc}") from None
            for line in trusted:
                click.echo(line)
        return EXIT_OK
    from loopkit.hooks.install import install as do_install
    from loopkit.hooks.install import settings_path

    path = settings_path(app.root, user)
    changed = do_install(path)
    if not changed:
        click.echo(f"{path}: loopkit's hooks are there already; nothing changed")
    for line in changed:
        click.echo(f"{path}: {line}")
    return EXIT_OK
