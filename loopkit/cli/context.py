"""The one-line report of an unexpected error (what every command is handed, the
:class:`~loopkit.commands.app.App`, lives in :mod:`loopkit.commands.app`)."""

from __future__ import annotations

import sys

from loopkit.redact import Redactor
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


def report_bug(exc: BaseException, app: App, *, traceback: bool = False) -> None:
    """One line on stderr for an unexpected error; the traceback goes to events.jsonl.

    With ``traceback`` (LOOPKIT_DEBUG=1) the traceback is printed too — redacted, like
    every other line loopkit writes.
    """
    import traceback as tb

    secrets = app._config.channels.secrets() if app._config else ()
    redactor = Redactor(secrets)
    line = redactor.text(f"{type(exc).__name__}: {exc}").splitlines() or [type(exc).__name__]
    where = ""
    if app._config:
        from loopkit.log import get_logger

        get_logger("loopkit").error("unexpected_error", exc_info=exc, _console=False)
        where = f"; details in {Workspace.of(app._config).events_file}"
    if traceback:
        sys.stderr.write(redactor.text("".join(tb.format_exception(exc))))
    sys.stderr.write(
        f"loopkit: unexpected error (a bug, please report it): {line[0]}{where}; "
        "LOOPKIT_DEBUG=1 prints the traceback\n"
    )
