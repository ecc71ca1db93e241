"""Finding a request's workspace among the machine's registered ones (SPEC section 10), so
``loopkit reply``, ``loopkit requests show`` and the phone's answers work from any folder."""

from __future__ import annotations

from pathlib import Path

from loopkit import config as config_mod
from loopkit.errors import LoopkitError
from loopkit.home import Registry
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


def store_for(path: Path) -> RequestStore:
    """The request store of the workspace at ``path`` (its own ``blocked_file`` honoured)."""
    return RequestStore(Workspace.of(config_mod.load(path, lenient=True)))


def store_holding(
    request_id: str, here: RequestStore, registry: Registry | None = None
) -> RequestStore:
    """``here`` when it holds ``request_id``, else the registered workspace's that does;
    ``here`` again when none does (its load then says "no request")."""
    if here.path(request_id).exists():
        return here
    for registered in (registry or Registry()).workspaces():
        try:
            store = store_for(registered.path)
            if store.path(request_id).exists():
                return store
        except LoopkitError:
            continue
    return here
