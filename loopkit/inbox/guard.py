"""The inbox holds under load: a bound on open connections, and a deadline for request
headers (SPEC section 17).

uvicorn's h11 protocol arms no timer until a response is complete, so a connection that
sends half a request header — or nothing — is held for as long as its peer likes, and any
local process could open enough of them to use up the server's file descriptors. uvicorn's
``limit_concurrency`` does not help: it answers 503 to the *next real request* once the
half-open connections fill it.

So each connection waiting for a request's headers — just opened, or kept alive after a
response — has ``header_timeout`` seconds for them to arrive (counted from when it began
waiting: a byte at a time does not stretch it), and the server holds at most
``max_connections``: a connection over the bound closes the oldest one still waiting for
its headers (a real client's arrive with its first packet, so the oldest waiting are the
ones that stall), or itself when every other is busy with a request.

And a request's body is read as it arrives, up to a cap (:func:`body_within`): one over it
is refused (413) the moment it passes the cap (or at once, when it says so in its
``Content-Length``), never read whole into memory first (SPEC §28).
"""

from __future__ import annotations

import resource

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    from typing import Any

    from starlette.requests import Request

HEADER_TIMEOUT = 5.0  # seconds for a request's headers to arrive
MAX_CONNECTIONS = 256  # one human's inbox: a few phones and browsers, with room to spare
RESERVE = 64  # descriptors kept for everything else serve opens (records, logs, the relay)
# asyncio accepts up to ``backlog`` connections per turn of its loop (uvicorn's ``backlog``
# is that count, and the listen queue's depth at first), and the guard closes the ones over
# the bound a turn or two later: BURSTS such bursts beyond it is the margin kept (measured
# under floods of 5,000: 1.6 bursts at the most).
BACKLOG = 64
BURSTS = 3
# The kernel's queue of connections not accepted yet holds no descriptor of ours, so it
# stays deep (uvicorn's default): a SYN it drops waits out a 1 s retransmit.
LISTEN_QUEUE = 2048


@record(frozen=True, slots=True)
class Limits:
    max_connections: int
    header_timeout: float = HEADER_TIMEOUT
    backlog: int = BACKLOG


def limits(nofile: int | None = None) -> Limits:
    """The bounds for a process allowed ``nofile`` open files (default: its RLIMIT_NOFILE
    soft limit): at most MAX_CONNECTIONS, always with room below the limit for the bursts
    of accepts (BURSTS × ``backlog``) and the rest of the process (RESERVE), so an accept
    never meets EMFILE (asyncio would then stop accepting for a second)."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return Limits(MAX_CONNECTIONS)
    backlog = max(4, min(BACKLOG, nofile // 16))
    room = nofile - BURSTS * backlog - RESERVE
    return Limits(max(4, min(MAX_CONNECTIONS, room)), backlog=backlog)


def most_open(limits: Limits) -> int:
    """The most descriptors a server held to ``limits`` is to have open (the bound, BURSTS
    accept bursts, RESERVE)."""
    return limits.max_connections + BURSTS * limits.backlog + RESERVE


class ConnectionGuard:
    """The open connections of one server, and those of them still waiting for a request's
    headers (oldest first, each with its deadline)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.open: set[GuardedProtocol] = set()
        self.waiting: dict[GuardedProtocol, asyncio.TimerHandle] = {}
        self.dropped = 0  # connections closed by the bound or the deadline

    def opened(self, conn: GuardedProtocol) -> None:
        self.open.add(conn)
        self.track(conn)
        while len(self.open) > self.limits.max_connections:
            # the oldest still waiting for its headers; none waiting: the newcomer
            self.drop(next(iter(self.waiting), conn))

    def closed(self, conn: GuardedProtocol) -> None:
        self.open.discard(conn)
        handle = self.waiting.pop(conn, None)
        if handle is not None:
            handle.cancel()

    def track(self, conn: GuardedProtocol) -> None:
        """After each turn of ``conn``'s parser: is it waiting for a request's headers?"""
        waiting = conn in self.open and conn.waiting_for_headers()
        if waiting and conn not in self.waiting:
            self.waiting[conn] = conn.loop.call_later(self.limits.header_timeout, self.drop, conn)
        elif not waiting and conn in self.waiting:
            self.waiting.pop(conn).cancel()

    def drop(self, conn: GuardedProtocol) -> None:
        """Close ``conn`` now (its descriptor is freed at once, not after a FIN handshake)."""
        self.closed(conn)
        self.dropped += 1
        conn.transport.abort()


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol, reporting to a :class:`ConnectionGuard`."""

    guard: ConnectionGuard  # set on the subclass :func:`guarded` makes

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.guard.opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.closed(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self.guard.track(self)

    def waiting_for_headers(self) -> bool:
        return self.conn.their_state is h11.IDLE and not self.transport.is_closing()


def guarded(guard: ConnectionGuard) -> type[GuardedProtocol]:
    """The protocol class to hand uvicorn (``Config(http=…)``): every connection it makes
    reports to ``guard``."""
    attributes: dict[str, Any] = {"guard": guard}
    return type("Guarded", (GuardedProtocol,), attributes)


async def body_within(request: Request, limit: int) -> bytes | None:
    """``request``'s body, read chunk by chunk as it arrives — or None once it is over
    ``limit`` bytes (said by its ``Content-Length`` or counted), the rest left unread: the
    caller answers 413, and uvicorn closes a connection whose body was not read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)
