"""``init``, ``doctor`` and ``send-test``: setting a workspace up and checking it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from loopkit.channels import CHANNELS
from loopkit.errors import EXIT_FAILURE, EXIT_OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.command()
@click.option(
    "--agent",
    help="claude, codex or gemini: set that agent up (agent line, hooks, escalation notes, "
    '.gitignore); anything else: the agent command itself, e.g. "./agent.sh".',
)
@click.option("--verify", help='The verify command, e.g. "pytest -q".')
@click.option(
    "--channel",
    type=click.Choice(tuple(CHANNELS)),
    default="none",
    show_default=True,
    help="How the human is told (secrets stay in the environment).",
)
@click.option(
    "--task-file",
    help="The task list (- [ ] lines); also a done that holds once every task is ticked or "
    "skipped.",
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.pass_obj
def init(
    app: App, agent: str | None, verify: str | None, channel: str, task_file: str | None,
    force: bool,
) -> int:  # fmt: skip
    """Write loopkit.toml and templates/BLOCKED.md.j2; existing files are kept unless --force.

    It writes into -C DIR, else the current folder: init makes a workspace where you are
    (it does not look upward for one, as the other commands do). It adds .loopkit/,
    /requests/ and BLOCKED.md to .gitignore (an agent's `git add -A` would commit them), and
    registers the workspace in LOOPKIT_HOME, so its questions reach the phone and the inbox
    before its first `loopkit run`.

    \b
    --agent claude|codex|gemini also sets that agent up, each step shown, and skipped when
    it is there already (a second run changes nothing): working agent (and for claude
    resume) lines, with --task-file a done that holds once every task is ticked or
    skipped, the agent's hooks, and a "when and how to escalate" section in CLAUDE.md /
    AGENTS.md / GEMINI.md.
    """
    from loopkit.setup.kit import KITS
    from loopkit.setup.scaffold import ignore, ignored
    from loopkit.setup.scaffold import init as do_init

    root = app.explicit or Path(".")
    kit = agent if agent in KITS else None
    result = do_init(root, agent=None if kit else agent, verify=verify, channel=channel,
                     force=force, task_file=None if kit else task_file)  # fmt: skip
    for path in result.written:
        click.echo(f"wrote {path}")
    for path in result.kept:
        click.echo(f"kept  {path} (exists; --force overwrites it)")
    steps = ignore(root, ignored(result.blocked_file))
    if kit:
        from loopkit.setup.kit import setup

        steps += setup(root, kit, task_file=task_file)
    for step in steps:
        click.echo(step.line())
    app.register(root)  # a hook's question now reaches the phone, the inbox and `reply`
    return EXIT_OK


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.pass_obj
def doctor(app: App, as_json: bool) -> int:
    """Check the config, the channel settings and the template; each problem with its fix.

    Finds what `run` would trip on: what `run` refuses to start on (no loopkit.toml, a
    channel that reaches nobody — a missing extra, the dial command's program, an Apprise
    URL Apprise cannot parse —, no agent, a program that certainly runs and is not there),
    in run's words; then every program of agent / resume / verify / done / preflight that
    may run (after &&, ||, ;, |) and is not there, task_file, required_env, the template,
    and the agents' hooks (one that cannot start, or is wrapped as `… || true`).

    \b
    Exit: 0 nothing wrong · 1 a problem · 78 `loopkit run` would refuse to start (as it
    exits then).
    """
    from loopkit.setup.doctor import diagnose, exit_code

    findings = diagnose(app.root)
    problems = sum(1 for f in findings if f.level == "problem")
    code = exit_code(findings)
    if as_json:
        rows = [{"level": f.level, "topic": f.topic, "text": f.text, "stops_run": f.stops_run}
                for f in findings]  # fmt: skip
        click.echo(json.dumps({"problems": problems, "exit": code, "findings": rows},
                              ensure_ascii=False))  # fmt: skip
    else:
        for finding in findings:
            click.echo(finding.line())
        if code == 78:
            click.echo(f"{problems} problem(s); `loopkit run` would refuse to start (exit 78)")
        else:
            click.echo(f"{problems} problem(s)" if problems else "no problems found")
    return code


@click.command("send-test")
@click.pass_obj
def send_test(app: App) -> int:
    """Send one test message over the configured channel (exit 0 sent, 1 not).

    A channel that reaches nobody — as `run` refuses it: missing settings, a missing extra —
    exits 78, naming it.
    """
    from loopkit.setup.doctor import send_test as do_send

    config = app.config()
    outcome, message = do_send(config)
    name = config.escalation.channel
    if outcome.ok:
        click.echo(message.text)
        click.echo(f"\nsent via {name}")
        return EXIT_OK
    click.echo(f"loopkit: error: {name}: not sent: {outcome.error}", err=True)
    return EXIT_FAILURE
