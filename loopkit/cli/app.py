"""The ``loopkit`` group, its global options, and the per-invocation context."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.errors import ConfigError
from loopkit.redact import Redactor
from loopkit.workspace import Workspace


@dataclass
class App:
    """What every command needs: the workspace, and a Config built once, on first use."""

    root: Path = Path(".")
    verbose: bool = False
    _config: Config | None = field(default=None, repr=False)

    def config(self, *, console_level: str = "warning") -> Config:
        """The Config; the first call also sets up logging (console from ``console_level``)."""
        if self._config is None:
            self._config = config_mod.load(self.root)
            self.setup_logging(self._config, console_level)
        return self._config

    def config_for_a_block(self) -> tuple[Config, ConfigError | None]:
        """The Config, or — when it is broken — every valid setting kept (``blocked_file``,
        the channel …), and the error: a question must never be lost to a typo."""
        try:
            return self.config(), None
        except ConfigError as exc:
            self._config = config_mod.load(self.root, lenient=True)
            self.setup_logging(self._config, "warning")
            return self._config, exc

    def workspace(self) -> Workspace:
        return Workspace.of(self.config())

    def setup_logging(self, config: Config, console_level: str) -> None:
        from loopkit import events

        events.setup(
            Workspace.of(config).events_file,
            Redactor(config.channels.secrets()),
            console_level="debug" if self.verbose else console_level,
        )


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
        import structlog

        structlog.get_logger("loopkit").error("unexpected_error", exc_info=exc, _console=False)
        where = f"; details in {Workspace.of(app._config).events_file}"
    if traceback:
        sys.stderr.write(redactor.text("".join(tb.format_exception(exc))))
    sys.stderr.write(
        f"loopkit: unexpected error (a bug, please report it): {line[0]}{where}; "
        "LOOPKIT_DEBUG=1 prints the traceback\n"
    )


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.option(
    "-C",
    "--workspace",
    "workspace",
    default=".",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Workspace folder (default: the current folder).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show debug events on the console.")
@click.version_option(package_name="loopkit", prog_name="loopkit")
@click.pass_obj
def root(app: App, workspace: Path, verbose: bool) -> None:
    """Supervise an AI coding-agent loop; when it is stuck, ask one human one clear question.

    \b
    Exit codes: 0 ok · 1 failure · 2 blocked · 3 aborted · 4 conflict · 64 usage
    65 bad input · 66 no such request · 78 config error · 130/143 interrupted.
    """
    app.root = workspace
    app.verbose = verbose


def _register() -> None:
    from loopkit.cli import ask_cmds, block_cmds, run_cmds, setup_cmds

    for command in (
        *block_cmds.COMMANDS,
        *run_cmds.COMMANDS,
        *ask_cmds.COMMANDS,
        *setup_cmds.COMMANDS,
    ):
        root.add_command(command)


_register()
