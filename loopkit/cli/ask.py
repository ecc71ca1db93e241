"""``ask`` and ``gate``: what an agent runs to put a question or a command to a human."""

from __future__ import annotations

import json
import os

import click

from loopkit.cli.body import runs
from loopkit.config import TIMEOUT_ACTIONS
from loopkit.escalation.policy import CATEGORIES
from loopkit.requests.record import KINDS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.command()
@click.option("--situation", "-s", required=True, help="1-3 sentences: what blocks you.")
@click.option("--policy", "-p", required=True, help="The escalation rules that apply.")
@click.option("--prompt", "-q", help="The question (≤ 120 characters, one question).")
@click.option(
    "--option", "options", multiple=True, metavar='"LABEL=value"',
    help="An answer (1-3, each ≤ 24 characters). Default: Proceed / Skip / Abort.",
)  # fmt: skip
@click.option("--recommend", metavar="VALUE", help="The option you recommend.")
@click.option("--category", type=click.Choice(CATEGORIES), help="The decision's category.")
@click.option("--confidence", type=click.FloatRange(0, 1), help="Your confidence, 0-1.")
@click.option("--irreversible", is_flag=True, help="The action cannot be undone (P0).")
@click.option("--timeout", "timeout", type=click.FloatRange(min=0, min_open=True),
              metavar="MIN", help="Minutes before the timeout action.")  # fmt: skip
@click.option("--on-timeout", type=click.Choice(TIMEOUT_ACTIONS), help="What happens then.")
@click.option("--attach", multiple=True, metavar="PATH", help="A file or URL to look at.")
@click.option("--request-id", "--request_id", "request_id", help="Your own id for it.")
@click.option("--key", help="A request key: asking again returns the open request.")
@click.option("--kind", type=click.Choice(KINDS), default="question", show_default=True)
@click.option("--block", is_flag=True, help="Also write BLOCKED.md and send (exit 2).")
@click.option("--check-target", metavar="TEXT", help="Review: what the human is to check.")
@click.option("--criterion", "criteria", multiple=True, metavar="TEXT",
              help="Review: a completion criterion (repeatable).")  # fmt: skip
@click.option("--artifact-url", metavar="URL", help="Review: the artifact to look at (https).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
@runs("loopkit.commands.ask:ask")
def ask() -> None:
    """Decide whether a human is needed and, if so, compose one mobile-first question.

    No human needed (a confident, non-P0 situation): exit 0, nothing written. Otherwise
    requests/<id>.json is written and the prompt block printed; --block also writes
    BLOCKED.md and sends the message, as escalate does (exit 2). A prompt that breaks
    the rubric is refused with exit 65, the rule named, nothing written.
    """


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--wait", is_flag=True, help="Wait for the answer instead of exiting 2.")
@click.option("--timeout", type=click.FloatRange(min=0), metavar="S", help="With --wait.")
@click.option(
    "--json", "as_json", is_flag=True,
    help="Print the outcome as JSON on stdout; the command's own stdout goes to stderr.",
)  # fmt: skip
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_obj
def gate(
    app: App, wait: bool, timeout: float | None, as_json: bool, command: tuple[str, ...]
) -> int:
    """Run COMMAND only once a human approved this exact command (argv + folder).

    The first call asks for approval (BLOCKED.md, the message) and exits 2; once approved,
    the next call runs it and exits with its code. Rejected: exit 3, not run. A changed
    command is a new request; an approval is used once.

    \b
    Exit: 2 waiting for approval (not run) · 3 rejected, changes requested or
    expired (not run) · 127 approved but it cannot start · otherwise the command's
    own exit code. A command that exits 2, 3 or 127 itself looks the same, so
    scripts that must tell them apart use --json: stdout is then one object,
    {"state": "waiting"|"rejected"|"ran"|"cannot_run", "exit": N,
     "request_id": ID, "message": TEXT}, the command's stdout goes to stderr,
    and the exit code is unchanged.
    """
    from loopkit.escalation.gate import gate as do_gate

    config = app.config()
    app.register()
    result = do_gate(
        config,
        list(command),
        cwd=os.getcwd(),
        wait=wait,
        timeout=timeout,
        escalator=app.escalator(config),
        stdout=2 if as_json else None,  # with --json, stdout is the outcome's alone
    )
    click.echo(f"loopkit: gate: {result.message}", err=True)
    if as_json:
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False))
    return result.exit_code
