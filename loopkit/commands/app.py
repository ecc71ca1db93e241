"""What one invocation is handed: the workspace, one Config, its hub, its store, and every
other registered workspace's store (SPEC sections 9, 10 and 15).

The hubs are built here — once, where the application is assembled — and handed down: the
store of this workspace gets the hub its own Config names, and
:class:`~loopkit.requests.locate.Stores` gives every other workspace's store the hub *its*
Config names. The CLI and ``loopkit mcp`` both run on an :class:`App`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from loopkit import agentsession
from loopkit.datarecord import field, record
from loopkit.discover import NotAFolder, find_workspace, is_workspace
from loopkit.errors import ConfigError, NotAWorkspace, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # each imported where it is first used: `--help` needs none of them
    from loopkit.answering.service import Answering
    from loopkit.config import Config
    from loopkit.escalation.escalator import Escalator
    from loopkit.fleet import Hubs
    from loopkit.requests.locate import Stores
    from loopkit.requests.store import RequestStore
    from loopkit.workspace import Workspace


@record
class App:
    """What every command needs: the workspace, and a Config built once, on first use."""

    root: Path = Path(".")  # the workspace, as found (SPEC §9)
    explicit: Path | None = None  # the -C folder, if one was given
    verbose: bool = False
    # A long-running process (``run``, ``mcp``): its events go through structlog's chain
    # (:mod:`loopkit.structured`); a short command's through loopkit.log alone (SPEC §20).
    long_running: bool = False
    # This process runs inside a supervised agent's session (SPEC §11): what it asks is the
    # agent's, and the supervisor sends it (see :meth:`escalator`).
    agent_session: bool = field(default_factory=agentsession.inside)
    _config: Config | None = field(default=None, repr=False)
    _store: RequestStore | None = field(default=None, repr=False)
    _stores: Stores | None = field(default=None, repr=False)
    _hubs: Hubs | None = field(default=None, repr=False)

    def locate(self, explicit: Path | None, *, verbose: bool = False) -> None:
        """Find the workspace as every command does (SPEC §9): ``explicit`` is the ``-C``
        folder. A ``-C`` or ``LOOPKIT_WORKSPACE`` that is no folder is a usage error."""
        self.explicit = explicit
        try:
            self.root = Path(find_workspace(None if explicit is None else str(explicit)))
        except NotAFolder as exc:
            raise UsageError(str(exc)) from None
        self.verbose = verbose

    def in_workspace(self) -> bool:
        """Whether the folder found (SPEC §9) is a loopkit workspace, not merely the current
        folder a command fell back to."""
        return is_workspace(str(self.root))

    def require_workspace(self) -> None:
        """For a command that reads or changes one workspace (``status``, ``unblock``): in a
        folder that is none, say so (exit 66) rather than answer for an empty one ("idle",
        "not blocked")."""
        if not self.in_workspace():
            raise NotAWorkspace(not_a_workspace(self.root))

    @property
    def hubs(self) -> Hubs:
        """One hub per fleet DSN for the whole invocation (SPEC §15)."""
        if self._hubs is None:
            from loopkit.fleet import Hubs

            self._hubs = Hubs()
        return self._hubs

    def config(self, *, console_level: str = "warning", anywhere: bool = False) -> Config:
        """The Config; the first call also sets up logging (console from ``console_level``).

        ``anywhere``: the command works from any folder (``reply``, ``requests``, ``inbox``):
        run in a folder that is no workspace, it writes nothing there (no ``.loopkit/``)."""
        from loopkit import config as config_mod

        if self._config is None:
            self._config = config_mod.load(self.root)
            self.setup_logging(self._config, console_level, anywhere=anywhere)
        return self._config

    def config_for_a_block(self) -> tuple[Config, ConfigError | None]:
        """The Config, or — when it is broken — every valid setting kept (``blocked_file``,
        the channel …), and the error: a question must never be lost to a typo."""
        try:
            return self.config(), None
        except ConfigError as exc:
            from loopkit import config as config_mod

            self._config = config_mod.load(self.root, lenient=True)
            self.setup_logging(self._config, "warning")
            return self._config, exc

    def workspace(self) -> Workspace:
        from loopkit.workspace import Workspace

        return Workspace.of(self.config())

    def register(self, root: Path | None = None) -> None:
        """Record this workspace — or the folder ``root``, without reading its config — in the
        machine's loopkit home (SPEC §10); a home that cannot be written is a warning, never
        a lost block."""
        from loopkit.home import Registry
        from loopkit.workspace import Workspace

        if root is None:
            config = self._config or self.config()
            where, repo = config.workspace, Workspace.of(config).repo_name()
        else:
            where = root.resolve()  # as config.load makes it: one registry entry per folder
            repo = Workspace(where, where / "BLOCKED.md").repo_name()
        try:
            Registry().register(where, repo)
        except OSError as exc:
            sys.stderr.write(
                f"loopkit: warning: cannot register this workspace in LOOPKIT_HOME "
                f"({exc.strerror}); `loopkit inbox` will not list it\n"
            )

    def store(self) -> RequestStore:
        """The one request store of this invocation, with the hub its Config names."""
        if self._store is None:
            from loopkit.requests.store import RequestStore
            from loopkit.workspace import Workspace

            config = self._config or self.config()
            self._store = RequestStore(Workspace.of(config), hub=self.hubs.for_config(config))
        return self._store

    def escalator(self, config: Config | None = None) -> Escalator:
        """The escalator for this workspace's store (``config``: the one to raise blocks with,
        e.g. :meth:`config_for_a_block`'s). Inside a supervised agent's session its blocks are
        marked as the agent's and their send is left to the supervisor (SPEC §16)."""
        from loopkit.escalation.escalator import Escalator  # the sender, jinja2: on use only

        return Escalator(
            config or self.config(), store=self.store(), agent_session=self.agent_session
        )

    def stores(self) -> Stores:
        """Every registered workspace's store (this one's is :meth:`store`)."""
        if self._stores is None:
            from loopkit.requests.locate import Stores

            self._stores = Stores(self.hubs.for_config)
            if self._config is not None:
                self._stores.add(self._config, self.store())
        return self._stores

    def answering(self) -> Answering:
        """The answering service for this invocation: this workspace's store first, then
        every registered one's and the fleets'."""
        from loopkit.answering.service import Answering

        return Answering(stores=self.stores(), hubs=self.hubs, here=self.store())

    def store_holding(self, request_id: str) -> RequestStore:
        """This workspace's store, or the registered workspace's that holds ``request_id``
        (this one's again when none does: its load then says "no request")."""
        here = self.store()
        return self.stores().holding(request_id, here) or here

    def setup_logging(self, config: Config, console_level: str, *, anywhere: bool = False) -> None:
        from loopkit import log as events
        from loopkit.config import CONFIG_NAME
        from loopkit.redact import Redactor
        from loopkit.workspace import Workspace

        workspace = Workspace.of(config)
        is_workspace = (config.workspace / CONFIG_NAME).exists() or workspace.state_dir.is_dir()
        if self.long_running:  # run, mcp: structlog's chain (its import is no one's wait)
            from loopkit import structured as events  # type: ignore[no-redef]
        events.setup(
            workspace.events_file if is_workspace or not anywhere else None,
            Redactor(config.channels.secrets()),
            console_level="debug" if self.verbose else console_level,
        )


def not_a_workspace(root: Path) -> str:
    return (
        f"not a loopkit workspace: {root} (no loopkit.toml or .loopkit/ here or in a folder "
        "above); run this in a loop's workspace or pass -C DIR — `loopkit ps` lists every "
        "loop, `loopkit init` makes one"
    )
