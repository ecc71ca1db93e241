"""The workspace a ``loopkit mcp`` server serves: found once at start, as every command finds
it (SPEC section 9), with the same :class:`~loopkit.commands.app.App` as the command line."""

from __future__ import annotations

from loopkit.commands.app import App
from loopkit.config import Config
from loopkit.datarecord import record
from loopkit.errors import ConfigError
from loopkit.requests.store import RequestStore


@record(frozen=True, slots=True)
class ServedWorkspace:
    """The App (Config, store, registration) and the loopkit.toml error found at start.

    The Config is read once, when the server starts (like ``loopkit serve``): restart the
    server after editing loopkit.toml. A broken loopkit.toml refuses every tool as the
    command line refuses every command (exit 78) — except ``escalate``, which, like
    ``loopkit escalate``, raises the block with the settings that are valid.
    """

    app: App
    broken: ConfigError | None = None

    @classmethod
    def start(cls, app: App) -> ServedWorkspace:
        """Load the Config (this also sets logging up: stderr and events.jsonl) and the store."""
        _, broken = app.config_for_a_block()
        app.store()
        return cls(app, broken)

    def config(self) -> Config:
        """The Config, or the config error (one line) when loopkit.toml is broken."""
        if self.broken is not None:
            raise self.broken
        return self.app.config()

    def config_for_a_block(self) -> Config:
        """The Config even when loopkit.toml is broken (every valid setting kept): a question
        must never be lost to a typo."""
        return self.app.config()

    def store(self) -> RequestStore:
        return self.app.store()
