"""``requests``, ``requests show`` and ``requests wait``: the list, one record, the wait."""

from __future__ import annotations

import json

import click

from loopkit.cli.body import runs_unless_subcommand
from loopkit.errors import EXIT_OK
from loopkit.requests.record import KINDS, STATUSES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.group(invoke_without_command=True)
@click.option("--status", type=click.Choice(STATUSES), help="Only requests with this status.")
@click.option("--kind", type=click.Choice(KINDS), help="Only requests of this kind.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one array).")
@click.pass_context
@runs_unless_subcommand("loopkit.commands.requests:list_requests")
def requests() -> None:
    """List requests (oldest first). `requests show ID` is the one true read."""


@requests.command("show")
@click.argument("request_id")
@click.option("--json", "as_json", is_flag=True, help="JSON (the default: it is the record).")
@click.pass_obj
def requests_show(app: App, request_id: str, as_json: bool) -> int:
    """Print the whole record as JSON: the one true read of a request's outcome."""

    app.config(anywhere=True)
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
    0 approved or an option chosen · 3 rejected, aborted, expired, unblocked by
    hand or dismissed · 4 changes requested · 2 still open when --timeout ran out.
    """
    from loopkit.requests.answer import outcome_of
    from loopkit.requests.outcome import exit_code, wait_for

    app.config(anywhere=True)
    record = wait_for(app.store(), request_id, timeout=timeout)
    res = record.resolution
    click.echo(
        json.dumps(
            {
                "request_id": record.request_id,
                "status": record.status,
                "outcome": outcome_of(record),
                "parsed_decision": res.parsed_decision if res else None,
                "reason": res.reason if res else None,
            },
            ensure_ascii=False,
        )
    )
    return exit_code(record)
