"""``ask``, ``reply``, ``unblock``, ``requests`` and ``gate``: questions and their answers."""

from __future__ import annotations

import getpass
import json
import os
from typing import cast

import click

from loopkit.cli.context import App
from loopkit.config import TIMEOUT_ACTIONS
from loopkit.errors import EXIT_BLOCKED, EXIT_OK, AgentAnswer
from loopkit.escalation.policy import CATEGORIES
from loopkit.requests.record import KINDS, STATUSES, Kind


def refuse_agents() -> None:
    """Only a human answers (SPEC section 11): never a process of a supervised agent."""
    from loopkit import agentsession

    if agentsession.inside():
        raise AgentAnswer(agentsession.REFUSAL)


def human() -> str:
    """Who is answering from this shell: $LOOPKIT_HUMAN, else the login name."""
    try:
        return os.environ.get("LOOPKIT_HUMAN") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


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
def ask(
    app: App,
    situation: str,
    policy: str,
    prompt: str | None,
    options: tuple[str, ...],
    recommend: str | None,
    category: str | None,
    confidence: float | None,
    irreversible: bool,
    timeout: float | None,
    on_timeout: str | None,
    attach: tuple[str, ...],
    request_id: str | None,
    key: str | None,
    kind: str,
    block: bool,
    check_target: str | None,
    criteria: tuple[str, ...],
    artifact_url: str | None,
    as_json: bool,
) -> int:
    """Decide whether a human is needed and, if so, compose one mobile-first question.

    No human needed (a confident, non-P0 situation): exit 0, nothing written. Otherwise
    requests/<id>.json is written and the prompt block printed; --block also writes
    BLOCKED.md and sends the message, as escalate does (exit 2). A prompt that breaks
    the rubric is refused with exit 65, the rule named, nothing written.
    """
    from loopkit.escalation.ask import Question, prompt_block
    from loopkit.escalation.ask import ask as do_ask

    asked = do_ask(
        app.config(),
        Question(
            situation=situation,
            policy=policy,
            prompt=prompt,
            options=options,
            recommend=recommend,
            category=category,
            confidence=confidence,
            irreversible=irreversible,
            timeout_minutes=timeout,
            on_timeout=on_timeout,
            attach=attach,
            request_id=request_id,
            key=key,
            kind=cast(Kind, kind),
            block=block,
            check_target=check_target,
            criteria=criteria,
            artifact_url=artifact_url,
        ),
        store=app.store(),
    )
    app.register()
    record = asked.record
    code = EXIT_BLOCKED if block and record is not None else EXIT_OK
    if as_json:
        click.echo(
            json.dumps(
                {
                    "needs_human": asked.needs_human,
                    "reason": asked.reason,
                    "note": asked.note,
                    "request_id": record.request_id if record else None,
                    "request": record.to_dict() if record else None,
                },
                ensure_ascii=False,
            )
        )
        return code
    if record is None:
        click.echo(f"no human needed: {asked.reason}")
        if asked.note:
            click.echo(f"note: {asked.note}")
        return code
    if asked.existing:
        click.echo(f"already asked (key {record.request_key!r}): the open request stands")
    click.echo(prompt_block(record))
    if asked.joined:
        click.echo(f"already blocked: joined request {asked.joined}; nothing was sent")
    return code


@click.command()
@click.option("--request-id", "--request_id", "request_id", required=True, help="Which request.")
@click.option("--reply", "-r", required=True, help="The human's reply, verbatim.")
@click.option("--expected-updated-at", metavar="TS", help="Refuse (exit 4) if it changed since.")
@click.option("--by", default=None, help="Who answers (default: $LOOPKIT_HUMAN or your login).")
@click.pass_obj
def reply(
    app: App, request_id: str, reply: str, expected_updated_at: str | None, by: str | None
) -> int:
    """Record a human's answer to a request and print the decision as JSON.

    Matching: an option's letter or number, a unique label prefix, a value, a clear fuzzy
    match; "work on it" / "your call" takes the recommendation; anything else is free text.
    Exit 4 if the request was already answered (the first answer stands), 66 if there is no
    such request, 65 if its record is corrupt.
    """
    from loopkit.fleet.route import answer_anywhere

    refuse_agents()
    app.config()
    result, _ = answer_anywhere(
        request_id, reply, by=by or human(), via="cli", here=app.store(),
        expected_updated_at=expected_updated_at,
    )  # fmt: skip
    click.echo(json.dumps(result.decision, ensure_ascii=False))
    if result.deferred:
        click.echo(f"deferred: request {request_id} stays open", err=True)
    return EXIT_OK


@click.command()
@click.option("--reply", "-r", help="Answer the open block's question (else: no answer).")
@click.option("--by", default=None, help="Who answers (default: $LOOPKIT_HUMAN or your login).")
@click.pass_obj
def unblock(app: App, reply: str | None, by: str | None) -> int:
    """Resolve the open block's request and remove BLOCKED.md.

    With --reply the answer is parsed and recorded like `loopkit reply` (a running
    supervisor hands it to the next agent run as LOOPKIT_DECISION); without, the request
    is resolved as "unblocked by hand".
    """
    from loopkit.escalation.unblock import unblock as do_unblock

    refuse_agents()

    outcome = do_unblock(app.config(), reply=reply, by=by or human(), store=app.store())
    if outcome.decision is not None:
        click.echo(json.dumps(outcome.decision, ensure_ascii=False))
    click.echo(outcome.message, err=True)
    return EXIT_OK


@click.group(invoke_without_command=True)
@click.option("--status", type=click.Choice(STATUSES), help="Only requests with this status.")
@click.option("--kind", type=click.Choice(KINDS), help="Only requests of this kind.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one array).")
@click.pass_context
def requests(ctx: click.Context, status: str | None, kind: str | None, as_json: bool) -> int:
    """List requests (oldest first). `requests show ID` is the one true read."""
    if ctx.invoked_subcommand is not None:
        return EXIT_OK
    from loopkit.requests.listing import listing, render

    app: App = ctx.obj
    app.config()
    rows, problems = listing(app.store(), status=status, kind=kind)
    click.echo(json.dumps(rows, ensure_ascii=False) if as_json else render(rows))
    for problem in problems:
        click.echo(f"loopkit: warning: {problem}", err=True)
    return EXIT_OK


@requests.command("show")
@click.argument("request_id")
@click.option("--json", "as_json", is_flag=True, help="JSON (the default: it is the record).")
@click.pass_obj
def requests_show(app: App, request_id: str, as_json: bool) -> int:
    """Print the whole record as JSON: the one true read of a request's outcome."""

    app.config()
    record = app.store_holding(request_id).load(request_id)
    click.echo(json.dumps(record.to_dict(), indent=2, ensure_ascii=False))
    return EXIT_OK


@requests.command("wait")
@click.argument("request_id")
@click.option("--timeout", type=click.FloatRange(min=0), metavar="S", help="Give up after S s.")
@click.option("--json", "as_json", is_flag=True, help="JSON (the default).")
@click.pass_obj
def requests_wait(app: App, request_id: str, timeout: float | None, as_json: bool) -> int:
    """Wait until the request is answered; exit by outcome.

    \b
    0 approved or an option chosen · 3 rejected, aborted or expired
    4 changes requested · 2 still open when --timeout ran out.
    """
    from loopkit.requests.answer import outcome_of
    from loopkit.requests.waiting import exit_code, wait_for

    app.config()
    record = wait_for(app.store(), request_id, timeout=timeout)
    res = record.resolution or {}
    click.echo(
        json.dumps(
            {
                "request_id": record.request_id,
                "status": record.status,
                "outcome": outcome_of(record),
                "parsed_decision": res.get("parsed_decision"),
                "reason": res.get("reason"),
            },
            ensure_ascii=False,
        )
    )
    return exit_code(record)


@click.command(context_settings={"ignore_unknown_options": True})
@click.option("--wait", is_flag=True, help="Wait for the answer instead of exiting 2.")
@click.option("--timeout", type=click.FloatRange(min=0), metavar="S", help="With --wait.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_obj
def gate(app: App, wait: bool, timeout: float | None, command: tuple[str, ...]) -> int:
    """Run COMMAND only once a human approved this exact command (argv + folder).

    The first call asks for approval (BLOCKED.md, the message) and exits 2; once approved,
    the next call runs it and exits with its code. Rejected: exit 3, not run. A changed
    command is a new request; an approval is used once.
    """
    from loopkit.escalation.gate import gate as do_gate

    config = app.config()
    app.register()
    result = do_gate(
        config, list(command), cwd=os.getcwd(), wait=wait, timeout=timeout, store=app.store()
    )
    click.echo(f"loopkit: gate: {result.message}", err=True)
    return result.exit_code


COMMANDS = (ask, reply, unblock, requests, gate)
