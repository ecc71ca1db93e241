"""Time: UTC timestamps in the two shapes loopkit writes, and the clock a waiting loop reads.

``iso_seconds`` (``2026-12-02T13:11:06Z``) is for humans: the message, ``created_at``.
``iso_millis`` (``2026-12-02T13:11:06.123Z``) is for ``updated_at``, which scripts compare
for optimistic concurrency, so two writes in the same second must still differ.

:class:`Clock` is what a loop that decides by time is handed (the supervisor's
``clock=``): the monotonic time its deadlines are on, the wall-clock time a request's
``asked_at`` is compared with, and its one way to wait. :class:`SystemClock` is the real
one; a test hands in a fake whose waits return at once, the time moved on.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol


def now() -> datetime:
    return datetime.now(UTC)


def iso_seconds(moment: datetime | None = None) -> str:
    return (moment or now()).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_millis(moment: datetime | None = None) -> str:
    moment = (moment or now()).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    """Parse either shape (and any ISO-8601 with an offset); naive times are taken as UTC."""
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def later_than(previous: str | None, moment: datetime | None = None) -> str:
    """``iso_millis`` of ``moment``, moved on by a millisecond if needed to follow ``previous``."""
    moment = moment or now()
    if previous:
        try:
            before = parse_iso(previous)
        except ValueError:
            return iso_millis(moment)
        if moment <= before:
            moment = before + timedelta(milliseconds=1)
    return iso_millis(moment)


if TYPE_CHECKING:

    class Waitable(Protocol):
        """An event to wait on: ``threading.Event`` and :class:`~loopkit.watch.wake.Wake`."""

        def wait(self, timeout: float | None = None) -> bool: ...


if TYPE_CHECKING:

    class Clock(Protocol):
        def monotonic(self) -> float:
            """Seconds on a clock that never goes back: deadlines, pauses, timeouts."""
            ...

        def now(self) -> datetime:
            """The wall-clock time (UTC), for comparing with the stamps in records."""
            ...

        def wait(self, event: Waitable, seconds: float | None) -> bool:
            """Until ``event`` is set (True) or ``seconds`` have passed (False; None: no end)."""
            ...


class SystemClock:
    """The real time (``time.monotonic``, ``datetime.now``); a wait is ``event.wait``."""

    __slots__ = ()

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return now()

    def wait(self, event: Waitable, seconds: float | None) -> bool:
        return event.wait(seconds)
