"""The machine's workspaces and their stores (SPEC sections 10 and 15): finding a request's
workspace among the registered ones, so ``loopkit reply``, ``requests show``, the inbox and
the phone's answers work from any folder.

:class:`Stores` is the one place that scans the registry and loads a workspace's store. Each
store gets the hub its *own* workspace's configuration names (``hub_for``, handed down by
the assembler), never the hub of whichever config was loaded last. A workspace's Config is
read once and read again only when its ``loopkit.toml`` changed (a stat, not a parse, per
pass).
"""

from __future__ import annotations

import os
import threading

from loopkit import config as config_mod
from loopkit.config import CONFIG_NAME
from loopkit.datarecord import record
from loopkit.errors import LoopkitError
from loopkit.home import Registry
from loopkit.requests.hub import LocalHub
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from loopkit.config import Config
    from loopkit.home import Registered
    from loopkit.requests.hub import Hub

Stamp = tuple[int, int, int] | None


@record(frozen=True, slots=True)
class Place:
    """One workspace as loaded: its Config (lenient: a broken file keeps its valid settings)
    and its store."""

    config: Config
    store: RequestStore
    stamp: Stamp

    @property
    def workspace(self) -> Workspace:
        return self.store.workspace


def _stamp(root: Path) -> Stamp:
    try:
        info = os.stat(root / CONFIG_NAME)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def _local(config: Config) -> Hub:
    return LocalHub()


class Stores:
    """Every registered workspace's store, each with its own workspace's hub."""

    def __init__(
        self,
        hub_for: Callable[[Config], Hub] = _local,
        *,
        registry: Registry | None = None,
    ) -> None:
        self.hub_for = hub_for
        self.registry = registry or Registry()
        self._places: dict[Path, Place] = {}
        self._lock = threading.Lock()

    def add(self, config: Config, store: RequestStore) -> None:
        """Use ``store`` for its workspace (the assembler's own): one store per workspace."""
        with self._lock:
            self._places[store.workspace.root] = Place(config, store, _stamp(config.workspace))

    def place(self, path: Path) -> Place:
        """The workspace at ``path``: its Config and store (loaded again only when its
        ``loopkit.toml`` changed). Raises LoopkitError when it cannot be read at all."""
        root = path.resolve()
        stamp = _stamp(root)
        with self._lock:
            known = self._places.get(root)
        if known is not None and known.stamp == stamp:
            return known
        config = config_mod.load(root, lenient=True)
        store = RequestStore(Workspace.of(config), hub=self.hub_for(config))
        place = Place(config, store, stamp)
        with self._lock:
            self._places[root] = place
        return place

    def of(self, path: Path) -> RequestStore:
        """The request store of the workspace at ``path`` (its own ``blocked_file`` honoured)."""
        return self.place(path).store

    def registered(self, entries: list[Registered] | None = None) -> list[tuple[Registered, Place]]:
        """Every registered workspace that loads, oldest registration first (of ``entries``,
        the registry as read already, when given)."""
        found = []
        for registered in self.registry.workspaces() if entries is None else entries:
            try:
                found.append((registered, self.place(registered.path)))
            except LoopkitError:
                continue
        return found

    def all(self, here: RequestStore | None = None) -> list[RequestStore]:
        """``here`` first (when given), then every other registered workspace's store."""
        stores = [here] if here is not None else []
        skip = here.workspace.root if here is not None else None
        stores += [p.store for _, p in self.registered() if p.workspace.root != skip]
        return stores

    def holding(self, request_id: str, here: RequestStore | None = None) -> RequestStore | None:
        """``here`` when it holds ``request_id``, else the registered workspace's that does;
        None when no workspace of this machine does."""
        if here is not None and here.path(request_id).exists():
            return here
        for store in self.all():
            if store.path(request_id).exists():
                return store
        return None
