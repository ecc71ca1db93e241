"""``fleet``: the PostgreSQL database that many machines share (SPEC section 13)."""

from __future__ import annotations

import json

import click

from loopkit.errors import EXIT_OK, ConfigError, WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.group()
def fleet() -> None:
    """Share one human's requests, answers and bot across machines (PostgreSQL).

    \b
    Set [fleet] dsn in loopkit.toml or LOOPKIT_FLEET_DSN (a postgresql:// URL) on every
    machine, install the extra (pip install 'loopkit[fleet]'), run `loopkit fleet init`
    once. Unset, loopkit works on this machine alone.

    Exit 78 when no DSN is set, 1 when the database cannot be reached.
    """


def _connect(app: App):  # type: ignore[no-untyped-def]
    config = app.config()
    dsn = config.channels.fleet_dsn
    if not dsn:
        raise ConfigError(
            "no fleet configured: set [fleet] dsn in loopkit.toml or LOOPKIT_FLEET_DSN "
            "(e.g. postgresql://loopkit@db:5432/loopkit)"
        )
    import psycopg

    try:
        return psycopg.connect(dsn, connect_timeout=5, autocommit=True)
    except psycopg.Error as exc:
        from loopkit.redact import Redactor

        reason = Redactor(config.channels.secrets()).text(str(exc).strip().splitlines()[0])
        raise WorkspaceError(f"cannot reach the fleet database: {reason}") from None


@fleet.command()
@click.pass_obj
def init(app: App) -> int:
    """Create the fleet's tables, or migrate them to this loopkit's version (idempotent)."""
    from loopkit.fleet import schema

    with _connect(app) as conn:
        before, now = schema.init(conn)
    if before == now:
        click.echo(f"fleet schema is at version {now}: nothing to do")
    else:
        click.echo(f"fleet schema migrated from version {before} to {now}")
    return EXIT_OK


@fleet.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_obj
def status(app: App, as_json: bool) -> int:
    """Machines seen, open requests and loops per machine, who holds which bot's lease, and
    the lag (answers and steering orders given on one machine that their owner has not
    applied yet)."""
    from loopkit.fleet import schema
    from loopkit.home import machine

    with _connect(app) as conn:
        if schema.version(conn) == 0:
            raise ConfigError("the fleet database has no loopkit tables: run `loopkit fleet init`")
        info = schema.status(conn)
    info["this_machine"] = machine()
    if as_json:
        click.echo(json.dumps(info))
        return EXIT_OK
    click.echo(f"schema version {info['schema_version']} · this machine: {info['this_machine']}")
    for seen in info["machines"]:
        count = info["open"].get(seen["machine"], 0)
        loops = info["loops"].get(seen["machine"], 0)
        click.echo(f"  {seen['machine']}: seen {seen['seen_seconds_ago']:.0f} s ago, {count} open, "
                   f"{loops} loop(s)")  # fmt: skip
    click.echo("bot leases: " + (", ".join(info["leases"]) or "none held"))
    click.echo(
        f"answers not yet applied by their machine: {info['answers_not_applied']}"
        f" (oldest {info['oldest_unapplied_seconds']:.0f} s)"
    )
    click.echo(f"steering orders not yet applied by their machine: {info['steering_not_applied']}")
    return EXIT_OK
