"""``inbox`` and ``serve``: this machine's open questions, and the daemon that answers them."""

from __future__ import annotations

import os
import sys

import click

from loopkit.cli.body import runs
from loopkit.errors import EXIT_OK, ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the requests as JSON (one array).")
@click.pass_obj
@runs("loopkit.commands.inbox:inbox")
def inbox() -> None:
    """Every open question of this machine's loops, oldest first, from any folder.

    Lists the open (and deferred) requests of every workspace registered in LOOPKIT_HOME
    (each registers itself on run, escalate, ask and gate): repo, workspace, age, kind,
    question, choices, deadline, and how to answer.
    """


@click.command()
@click.option(
    "--listen", metavar="HOST:PORT", help="Where the inbox listens (default 127.0.0.1:8765)."
)
@click.option("--print-unit", is_flag=True, help="Print a systemd user unit for it, and exit.")
@click.option("--print-url", is_flag=True, help="Print the inbox URL and its QR code, and exit.")
@click.option("--rotate-token", is_flag=True, help="Make a new inbox token (signs out everyone).")
@click.option("--user", metavar="NAME", help="Who answers in the inbox (default: your login).")
@click.pass_obj
def serve(
    app: App,
    listen: str | None,
    print_unit: bool,
    print_url: bool,
    rotate_token: bool,
    user: str | None,
) -> int:
    """The per-user daemon: answers from the phone for every registered loop.

    Holds the bot's lease and relays taps and replies to whichever workspace holds the
    request — a bare `loopkit escalate` or a run.sh loop included — and retries the failed
    deliveries of blocks no supervisor watches, and serves the web inbox: every open question
    of every loop, answered with one tap from a phone's browser. On a terminal it prints the
    inbox's URL with its token and a QR code of it; the token (LOOPKIT_HOME/inbox.token) is
    exchanged for a session cookie on the first visit. Runs in the foreground; SIGINT /
    SIGTERM stop it (130 / 143). Channel settings come from the environment, as for `run`.

    \b
    Install as a user service:
      loopkit serve --print-unit > ~/.config/systemd/user/loopkit-serve.service
      systemctl --user enable --now loopkit-serve
    """
    from loopkit import structured as events  # a long-running process: structlog's chain
    from loopkit.config import load
    from loopkit.home import home
    from loopkit.inbox.serve import DEFAULT_LISTEN, unit
    from loopkit.inbox.serve import serve as do_serve
    from loopkit.redact import Redactor

    if print_unit:
        click.echo(unit(listen or DEFAULT_LISTEN), nl=False)
        return EXIT_OK
    if print_url:
        from loopkit.inbox.auth import InboxToken
        from loopkit.inbox.serve import inbox_url, parse_listen, qr_code

        host, port = parse_listen(listen or DEFAULT_LISTEN, explicit=listen is not None)
        token = InboxToken(home())
        url = inbox_url(host, port, token.rotate() if rotate_token else token.ensure())
        click.echo(url)
        if sys.stdout.isatty():
            click.echo(qr_code(url), nl=False)
        return EXIT_OK
    # serve has no workspace: its settings come from the environment, its events go to
    # LOOPKIT_HOME (a .loopkit/ in the folder it was started from would make that folder a
    # workspace for every command run beneath it).
    settings = load(home(), lenient=True).channels
    from loopkit import extras

    wanted = {
        "psycopg": bool(os.environ.get("LOOPKIT_FLEET_DSN", "").strip()),
        "slack_sdk": settings.slack_socket
        and bool(settings.slack_bot_token and settings.slack_app_token),
    }
    for module, needed in wanted.items():
        if needed and not extras.installed(module):  # as `run` says it: a config error
            raise ConfigError(extras.needs(module))
    events.setup(
        home() / "serve-events.jsonl",
        Redactor(settings.secrets()),
        console_level="debug" if app.verbose else "info",
    )
    from loopkit.inbox.web import default_user

    return do_serve(
        listen or DEFAULT_LISTEN,
        explicit=listen is not None,
        settings=settings,
        out=sys.stdout,
        user=user or default_user(),
        rotate=rotate_token,
        hubs=app.hubs,
    )
