"""What every command is handed: the per-invocation context (the workspace, one Config, one
store), and the one-line report of an unexpected error."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.errors import ConfigError
from loopkit.redact import Redactor
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


@dataclass
class App:
    """What every command needs: the workspace, and a Config built once, on first use."""

    root: Path = Path(".")  # the workspace, as found (SPEC §9)
    explicit: Path | None = None  # the -C folder, if one was given
    verbose: bool = False
    _config: Config | None = field(default=None, repr=False)
    _store: RequestStore | None = field(default=None, repr=False)

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

    def register(self) -> None:
        """Record this workspace in the machine's loopkit home (SPEC §10); a home that cannot
        be written is a warning, never a lost block."""
        from loopkit.home import Registry

        config = self._config or self.config()
        try:
            Registry().register(config.workspace, Workspace.of(config).repo_name())
        except OSError as exc:
            sys.stderr.write(
                f"loopkit: warning: cannot register this workspace in LOOPKIT_HOME "
                f"({exc.strerror}); `loopkit inbox` will not list it\n"
            )

    def store_holding(self, request_id: str) -> RequestStore:
        """This workspace's store, or the registered workspace's that holds ``request_id``."""
        from loopkit.requests.locate import store_holding

        return store_holding(request_id, self.store())

    def store(self) -> RequestStore:
        """The one request store of this invocation, for the Config in use."""
        if self._store is None:
            self._store = RequestStore(Workspace.of(self._config or self.config()))
        return self._store

    def setup_logging(self, config: Config, console_level: str) -> None:
        from loopkit import log as events

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
