"""The delivery plan: what to send next for an open block, over which channel, and when.

A pure function of the request's ``delivery`` entries, the ``[escalation]`` settings and the
time, so the schedule survives any restart (it lives in the record, never in memory) and
whichever loopkit process watches the block computes the same next step. In order:

1. An attempt left in flight (``ok: null``) for longer than :data:`IN_FLIGHT_GRACE` was cut
   short by a crash: it is sent once more (``repeat``), at once.
2. The current rung is the furthest channel of the ladder tried so far (the first at the
   start). Not yet delivered there:
   - never tried → send now;
   - the last try failed hard (not configured, unknown channel, a 4xx other than 429) or
     :data:`RUNG_TRIES` tries failed → the next rung, now (with no next rung: back off);
   - otherwise retry after ``retry_backoff`` × 2^(failed sends − 1), capped at
     ``retry_backoff_max`` (a try retried within one send — ``within_send`` — is not a send
     of its own).
3. Delivered on the current rung: the next rung after ``escalate_after`` without an answer
   (when set), and a reminder every ``remind_every`` (when set) up to ``max_reminders``,
   whichever comes first. A ``none`` rung is skipped: it sends nothing.
"""

from __future__ import annotations

from datetime import timedelta

from loopkit import clock
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Literal

    from loopkit.config import EscalationConfig
    from loopkit.requests.models import DeliveryAttempt
    from loopkit.requests.record import Request

RUNG_TRIES = 3  # failed tries on one rung before the next is tried as well
IN_FLIGHT_GRACE = 60.0  # seconds an attempt may be in flight before it counts as cut short
if TYPE_CHECKING:
    Kind = Literal["message", "repeat", "reminder"]


@record(frozen=True, slots=True)
class Due:
    """Send ``kind`` over ``channel`` at ``at`` (UTC)."""

    channel: str
    at: datetime
    kind: Kind = "message"


def is_hard(entry: DeliveryAttempt) -> bool:
    """A failure that retrying the same channel will not mend."""
    if entry.hard:
        return True
    status = entry.status
    return isinstance(status, int) and 400 <= status < 500 and status != 429


def _at(entry: DeliveryAttempt) -> datetime | None:
    try:
        return clock.parse_iso(str(entry.at))
    except ValueError:
        return None


def rungs(settings: EscalationConfig) -> list[str]:
    return [name for name in settings.ladder if name != "none"]


def current_rung(record: Request, ladder: list[str]) -> int:
    """The furthest rung tried so far (0 before any try)."""
    tried = [ladder.index(e.channel) for e in record.delivery if e.channel in ladder]
    return max(tried, default=0)


def delivered_at(record: Request, channel: str) -> datetime | None:
    """When the block's message first reached ``channel``, if it did."""
    for entry in record.delivery:
        if entry.channel == channel and entry.ok is True and not entry.reminder:
            return _at(entry)
    return None


def message_id(record: Request, channel: str) -> int | str | None:
    """The id of the message delivered on ``channel`` (a reminder replies to it)."""
    for entry in record.delivery:
        if entry.channel == channel and entry.ok is True and not entry.reminder:
            return entry.message_id
    return None


def next_due(record: Request, settings: EscalationConfig, now: datetime) -> Due | None:
    """The next send for ``record``, or None when there is nothing left to send."""
    ladder = rungs(settings)
    if not record.is_open or not ladder:
        return None
    for entry in record.delivery:
        if entry.in_flight and entry.channel in ladder:
            started = _at(entry) or now
            return Due(entry.channel, started + timedelta(seconds=IN_FLIGHT_GRACE), "repeat")
    rung = current_rung(record, ladder)
    channel = ladder[rung]
    reached = delivered_at(record, channel)
    if reached is None:
        return _until_delivered(record, settings, ladder, rung, now)
    options: list[Due] = []
    if settings.escalate_after and rung + 1 < len(ladder):
        options.append(Due(ladder[rung + 1], reached + timedelta(seconds=settings.escalate_after)))
    reminders = sum(1 for e in record.delivery if e.reminder)
    if settings.remind_every and reminders < settings.max_reminders:
        wait = settings.remind_every * (reminders + 1)
        options.append(Due(channel, reached + timedelta(seconds=wait), "reminder"))
    return min(options, key=lambda due: due.at, default=None)


def _until_delivered(
    record: Request, settings: EscalationConfig, ladder: list[str], rung: int, now: datetime
) -> Due:
    channel = ladder[rung]
    tries = [e for e in record.delivery if e.channel == channel and not e.reminder]
    if not tries:
        return Due(channel, now)
    last = tries[-1]
    sends = sum(1 for e in tries if not e.within_send)  # a send's own retry is one send
    if rung + 1 < len(ladder) and (is_hard(last) or sends >= RUNG_TRIES):
        return Due(ladder[rung + 1], now)
    wait = min(settings.retry_backoff * 2 ** (max(sends, 1) - 1), settings.retry_backoff_max)
    return Due(channel, (_at(last) or now) + timedelta(seconds=wait))
