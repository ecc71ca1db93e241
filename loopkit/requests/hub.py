"""The hub: what a fleet shares (SPEC sections 13 and 15) — one human's requests, answers and bot.

Every part that a fleet changes talks to a :class:`Hub` it was *handed*, never one it looked
up: the request store mirrors each write through its hub (``RequestStore(workspace,
hub=…)``), the answer path claims each answer through the store's hub, the Telegram relay
takes its bot lease and keeps its offset through the hub it was given, and the inboxes list
and answer other machines' requests through the hubs of the process. A hub is built where an
application is assembled — the CLI's :class:`~loopkit.commands.app.App`, ``serve``, ``run``'s
Supervisor, ``mcp`` — by :class:`loopkit.fleet.Hubs` (one per fleet DSN), the way httpx's
``Client(transport=…)`` is given its transport once. Loading a workspace's configuration
never changes which hub anything else uses.

:class:`LocalHub` is the embedded default (sections 1–12: files in the workspace and
``LOOPKIT_HOME``; it mirrors nothing and knows no other machine). This module knows nothing
of :mod:`loopkit.fleet`, which builds on it.
"""

from __future__ import annotations

from loopkit.datarecord import record
from loopkit.home.bot import BotLease, OffsetFile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
if TYPE_CHECKING:
    from collections.abc import Collection
    from datetime import datetime
    from typing import Any

    from loopkit.home.bot import Position
    from loopkit.requests.answered import Answer
    from loopkit.requests.record import Request
    from loopkit.workspace import Workspace


@record(frozen=True, slots=True)
class Remote:
    """A request another machine holds, as the fleet table has it."""

    machine: str
    workspace: str
    repo: str
    record: Request


if TYPE_CHECKING:

    class Lease(Protocol):
        @property
        def held(self) -> bool: ...
        def take(self) -> None: ...
        def release(self) -> None: ...


if TYPE_CHECKING:

    class Offsets(Protocol):
        """A bot's update offset and the updates it handled (SPEC §16): ``load``/``save`` the
        :class:`~loopkit.home.bot.Position`; ``handled`` says which of some updates were
        handled already, ``mark`` remembers one more (for eight days)."""

        bot: str

        def load(self) -> Position | None: ...
        def save(self, position: Position) -> None: ...
        def handled(self, keys: Collection[str]) -> set[str]: ...
        def mark(self, key: str, at: datetime) -> None: ...


if TYPE_CHECKING:

    class Hub(Protocol):
        """What a fleet shares. Every method is safe to call with the database gone: it works
        locally then, and the hub catches up when the database is back."""

        def mirror(self, workspace: Workspace, record: Request) -> None: ...
        def claim(self, workspace: Workspace, record: Request) -> bool: ...
        def remote_open(self) -> list[Remote]: ...
        def find(self, request_id: str) -> Remote | None: ...
        def answer_remote(
            self, remote: Remote, reply: str, *, by: str, via: str, about: dict[str, Any] | None
        ) -> Answer: ...
        def dismiss_remote(
            self, remote: Remote, *, by: str, via: str, reason: str | None
        ) -> Request: ...
        def bot_lease(self, bot: str) -> Lease: ...
        def offsets(self, token: str | None) -> Offsets: ...


class LocalHub:
    """The embedded default: one machine, files only."""

    def mirror(self, workspace: Workspace, record: Request) -> None:
        return None

    def claim(self, workspace: Workspace, record: Request) -> bool:
        return True  # the store's lock makes the one answer

    def remote_open(self) -> list[Remote]:
        return []

    def find(self, request_id: str) -> Remote | None:
        return None

    def answer_remote(
        self, remote: Remote, reply: str, *, by: str, via: str, about: dict[str, Any] | None
    ) -> Answer:
        raise NotImplementedError("no other machine without a fleet")

    def dismiss_remote(self, remote: Remote, *, by: str, via: str, reason: str | None) -> Request:
        raise NotImplementedError("no other machine without a fleet")

    def bot_lease(self, bot: str) -> Lease:
        return BotLease(bot)

    def offsets(self, token: str | None) -> Offsets:
        return OffsetFile(token)
