"""``escalate`` and ``check``: raising a block and asking whether there is one."""

from __future__ import annotations

import click

from loopkit import check as check_mod
from loopkit.cli.body import runs
from loopkit.errors import (
    EXIT_FAILURE,
    EXIT_OK,
    ChannelError,
    RequestNotFound,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.command()
@click.option("--question", "-q", required=True, help="The one question for the human.")
@click.option(
    "--context", "-c", required=True, help="What the agent was doing: feature, file, why now."
)
@click.option(
    "--attempted",
    "-a",
    multiple=True,
    required=True,
    help="What was tried and why it fell short (repeatable).",
)
@click.option(
    "--choice",
    "choices",
    multiple=True,
    required=True,
    metavar='"LABEL — CONSEQUENCE"',
    help="An answer the human can pick (1 to 3, repeatable).",
)
@click.option(
    "--trigger",
    default="agent",
    show_default=True,
    help="What raised it (agent, verify-failures, missing-credential, dependency-down, …).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the request record as JSON.")
@click.pass_obj
@runs("loopkit.commands.escalate:escalate")
def escalate() -> None:
    """Block the loop and ask the human (exit 2).

    Persists requests/<id>.json, writes BLOCKED.md (never over an existing one: a second
    escalation joins the open block and sends nothing), sends the five-line message over
    the configured channel and records the outcome. A failed send is a warning; the block
    stands either way.
    """


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_obj
def check(app: App, as_json: bool) -> int:
    """Exit 2 and print the head of BLOCKED.md when blocked; exit 0 otherwise.

    Starts about as fast as Python itself, for use at the head of every loop iteration.
    """
    return check_mod.check(str(app.root), as_json)


@click.command()
@click.pass_obj
def resend(app: App) -> int:
    """Send the open block's message again now (exit 0 sent, 1 failed, 66 no open block)."""
    from loopkit import clock
    from loopkit.escalation import delivery
    from loopkit.escalation.adoption import block_request_id
    from loopkit.escalation.sender import Sender

    config = app.config(console_level="info")
    request_id = block_request_id(app.workspace(), app.store())
    if request_id is None:
        raise RequestNotFound(
            f"not blocked ({config.escalation.blocked_file} is absent or names no request): "
            "nothing to resend"
        )
    record = app.store().load(request_id)
    if not record.is_open:
        raise RequestNotFound(f"request {request_id} is {record.status}: nothing to resend")
    ladder = delivery.rungs(config.escalation)
    if not ladder:
        raise ChannelError(
            "the channel is none, so there is nothing to send; set LOOPKIT_HITL_CHANNEL "
            "to telegram, slack or dial"
        )
    rung = ladder[delivery.current_rung(record, ladder)]
    channel = rung.channel + (f" to {rung.who}" if rung.who else "")
    due = delivery.Due(rung.channel, clock.now(), person=rung.who)
    outcome = Sender(config, app.store()).send(record, due, claim=False)
    assert outcome is not None  # an unclaimed send is always made
    if outcome.ok:
        click.echo(f"sent via {channel}: requests/{request_id}.json")
        return EXIT_OK
    click.echo(f"loopkit: error: {channel}: not sent: {outcome.error}", err=True)
    return EXIT_FAILURE
