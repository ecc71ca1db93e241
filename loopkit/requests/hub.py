"""The hub: what a fleet shares (SPEC section 13) — one human's requests, answers and bot.

Every part that a fleet changes talks to one :class:`Hub`, whichever store is behind it:
the request store mirrors each write through it, ``answer`` claims each answer through it,
the phone poller takes its bot lease and keeps its offset through it, and the inboxes list
and answer other machines' requests through it. :class:`LocalHub` is the embedded default
(sections 1–12: files in the workspace and ``LOOPKIT_HOME``; it mirrors nothing and knows
no other machine); with ``[fleet] dsn`` / ``LOOPKIT_FLEET_DSN`` set, ``config.load``
configures a :class:`~loopkit.fleet.pg.PgHub` on PostgreSQL. Nothing else in loopkit asks
whether there is a fleet.

This module imports nothing beyond the standard library (the request store imports it);
:mod:`loopkit.fleet` builds on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from loopkit.requests.answer import Answer
    from loopkit.requests.record import Request
    from loopkit.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Remote:
    """A request another machine holds, as the fleet table has it."""

    machine: str
    workspace: str
    repo: str
    record: Request


class Lease(Protocol):
    @property
    def held(self) -> bool: ...
    def take(self) -> None: ...
    def release(self) -> None: ...


class Offsets(Protocol):
    bot: str

    def load(self) -> int | None: ...
    def save(self, offset: int) -> None: ...


class Hub(Protocol):
    """What a fleet shares. Every method is safe to call with the database gone: it works
    locally then, and the hub catches up when the database is back."""

    def mirror(self, workspace: Workspace, record: Request) -> None: ...
    def claim(self, workspace: Workspace, record: Request) -> None: ...
    def remote_open(self) -> list[Remote]: ...
    def find(self, request_id: str) -> Remote | None: ...
    def answer_remote(
        self, remote: Remote, reply: str, *, by: str, via: str, about: dict[str, Any] | None
    ) -> Answer: ...
    def bot_lease(self, bot: str) -> Lease: ...
    def offsets(self, token: str | None) -> Offsets: ...
    def follow(self, stop: threading.Event, wake: Callable[[], None] | None = None) -> None: ...


class LocalHub:
    """The embedded default: one machine, files only."""

    def mirror(self, workspace: Workspace, record: Request) -> None:
        return None

    def claim(self, workspace: Workspace, record: Request) -> None:
        return None  # the store's lock makes the one answer

    def remote_open(self) -> list[Remote]:
        return []

    def find(self, request_id: str) -> Remote | None:
        return None

    def answer_remote(
        self, remote: Remote, reply: str, *, by: str, via: str, about: dict[str, Any] | None
    ) -> Answer:
        raise NotImplementedError("no other machine without a fleet")

    def bot_lease(self, bot: str) -> Lease:
        from loopkit.home.bot import BotLease

        return BotLease(bot)

    def offsets(self, token: str | None) -> Offsets:
        from loopkit.home.bot import OffsetFile

        return OffsetFile(token)

    def follow(self, stop: threading.Event, wake: Callable[[], None] | None = None) -> None:
        return None  # answers arrive as file changes: the folder watch sees them


_local = LocalHub()
_current: Any = _local
_dsn: str | None = None
_lock = threading.Lock()


def configure(dsn: str | None) -> str | None:
    """Use the fleet at ``dsn`` (None: the embedded default). Called by ``config.load``;
    returns why the fleet cannot be used (psycopg missing), else None."""
    global _current, _dsn
    import importlib.util

    if dsn is not None and importlib.util.find_spec("psycopg") is None:
        dsn = None
        problem: str | None = (
            "a fleet DSN is set ([fleet] dsn or LOOPKIT_FLEET_DSN) but psycopg is not "
            "installed: pip install 'loopkit[fleet]' (or unset it to work on this machine alone)"
        )
    else:
        problem = None
    with _lock:
        if dsn == _dsn:
            return problem
        if dsn is None:
            _current, _dsn = _local, None
            return problem
        from loopkit.fleet.pg import PgHub

        _current, _dsn = PgHub(dsn), dsn
    return problem


def current() -> Hub:
    """The hub this process uses (the last ``config.load`` chose it)."""
    hub_now: Hub = _current
    return hub_now
