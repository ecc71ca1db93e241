"""Invoking the command line: parse, call the command, map errors to exits.

Only this package turns exceptions into exit codes (see :mod:`loopkit.errors`). Click's own
usage errors exit 64, not click's default 2: here 2 means *blocked*.
"""

from __future__ import annotations

import click

from loopkit.cli.failures import exit_code_for, say
from loopkit.errors import EXIT_FAILURE, EXIT_SIGINT, EXIT_USAGE


def _usage_line(exc: click.UsageError) -> str:
    where = ""
    if exc.ctx is not None:
        where = f" (see `{exc.ctx.command_path} --help`)"
    return f"loopkit: usage error: {exc.format_message()}{where}"


def run(args: list[str]) -> int:
    from loopkit.cli.app import root
    from loopkit.commands.app import App

    app = App()
    try:
        result = root.main(args, prog_name="loopkit", standalone_mode=False, obj=app)
    except click.exceptions.NoArgsIsHelpError as exc:
        if exc.ctx is not None:
            click.echo(exc.ctx.get_help())
        return EXIT_USAGE
    except click.UsageError as exc:
        say(_usage_line(exc))
        return EXIT_USAGE
    except click.Abort:
        return EXIT_SIGINT
    except click.ClickException as exc:
        say(f"loopkit: error: {exc.format_message()}")
        return EXIT_FAILURE
    except (Exception, KeyboardInterrupt) as exc:
        return exit_code_for(exc, app)
    return result if isinstance(result, int) else 0
