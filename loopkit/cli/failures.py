"""What an exception that is not click's becomes: its line on stderr and the exit code.

Shared by the two ways a command line runs — :func:`loopkit.cli.invoke.run` (through click)
and :func:`loopkit.cli.fastpath.run` (without it) — so both map alike; neither imports click
here.
"""

from __future__ import annotations

import os
import sys

from loopkit import extras
from loopkit.errors import EXIT_CONFIG, EXIT_FAILURE, EXIT_SIGINT, LoopkitError

TYPE_CHECKING = False  # typing: ~2 ms of a start-up that has none to spare
if TYPE_CHECKING:
    from loopkit.commands.app import App


def say(line: str) -> None:
    """One line on stderr; a reader that has gone is no error of ours."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass


def exit_code_for(exc: BaseException, app: App) -> int:
    """The exit for ``exc`` (a :class:`LoopkitError`, an interrupt, a reader gone, a bug),
    having told the human what they need: one line, never a traceback unless asked for."""
    if isinstance(exc, LoopkitError):
        say(f"loopkit: error: {exc}")
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_SIGINT
    if isinstance(exc, BrokenPipeError):  # `loopkit requests | head`: the reader has gone
        return EXIT_FAILURE
    extra = extras.missing(exc)
    if extra is not None:  # an optional part this install lacks: a config error, not a bug
        say(f"loopkit: error: {extra}")
        return EXIT_CONFIG
    from loopkit.cli.context import report_bug

    report_bug(exc, app, traceback=bool(os.environ.get("LOOPKIT_DEBUG")))
    return EXIT_FAILURE
