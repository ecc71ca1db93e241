"""``escalate`` and ``check``: raising a block and asking whether there is one."""

from __future__ import annotations

import json

import click

from loopkit import check as check_mod
from loopkit.app import App
from loopkit.config import Config
from loopkit.errors import (
    EXIT_BLOCKED,
    EXIT_FAILURE,
    EXIT_OK,
    ChannelError,
    ConfigError,
    RequestNotFound,
)


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
def escalate(
    app: App,
    question: str,
    context: str,
    attempted: tuple[str, ...],
    choices: tuple[str, ...],
    trigger: str,
    as_json: bool,
) -> int:
    """Block the loop and ask the human (exit 2).

    Persists requests/<id>.json, writes BLOCKED.md (never over an existing one: a second
    escalation joins the open block and sends nothing), sends the five-line message over
    the configured channel and records the outcome. A failed send is a warning; the block
    stands either way.
    """
    from loopkit.escalation.escalator import Escalation
    from loopkit.escalation.repair import escalate as escalate_after_repair
    from loopkit.escalation.sender import message_for

    config, broken = app.config_for_a_block()
    app.register()
    escalator = app.escalator(config)
    result = escalate_after_repair(
        escalator, Escalation.of_texts(question, context, attempted, choices, trigger)
    )
    record = result.request
    if as_json:
        click.echo(
            json.dumps({"joined": result.joined, "request": record.to_dict()}, ensure_ascii=False)
        )
        return _blocked(broken, config, record.request_id)
    if result.joined:
        click.echo(f"already blocked: joined request {result.joined}; nothing was sent")
        return _blocked(broken, config, result.joined)
    click.echo(message_for(record, escalator.workspace.repo_name()).text)
    click.echo("")
    where = "sent" if result.outcome and result.outcome.ok else "not sent"
    channel = config.escalation.channel
    if channel == "none":
        where = "channel none: BLOCKED.md is the escalation"
    elif escalator.agent_session:
        where = f"{channel}: the supervisor sends it"
    else:
        where = f"{channel}: {where}"
    click.echo(
        f"blocked: {config.escalation.blocked_file} written, "
        f"request requests/{record.request_id}.json ({where})"
    )
    return _blocked(broken, config, record.request_id)


def _blocked(broken: ConfigError | None, config: Config, request_id: str) -> int:
    """Exit 2 — or 78 when loopkit.toml is broken (SPEC), the block raised all the same."""
    if broken is not None:
        raise ConfigError(
            f"{broken}; the block was raised anyway, with the settings that are valid "
            f"({config.escalation.blocked_file}, requests/{request_id}.json) — fix loopkit.toml"
        )
    return EXIT_BLOCKED


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
    channel = ladder[delivery.current_rung(record, ladder)]
    due = delivery.Due(channel, clock.now())
    outcome = Sender(config, app.store()).send(record, due, claim=False)
    assert outcome is not None  # an unclaimed send is always made
    if outcome.ok:
        click.echo(f"sent via {channel}: requests/{request_id}.json")
        return EXIT_OK
    click.echo(f"loopkit: error: {channel}: not sent: {outcome.error}", err=True)
    return EXIT_FAILURE
