"""The delivery plan: what to send next for an open block, to whom, over which channel, when.

A pure function of the request's ``delivery`` entries, the ``[escalation]`` settings and the
time, so the schedule survives any restart (it lives in the record, never in memory) and
whichever loopkit process watches the block computes the same next step.

The ladder's rungs are the people of ``[[escalation.people]]`` in order (SPEC §29), each on
their own channel and address; without people, the channels of ``[escalation] channel``
(SPEC §9). In order:

1. An attempt left in flight (``ok: null``) for longer than :data:`IN_FLIGHT_GRACE` was cut
   short by a crash: it is sent once more (``repeat``), at once.
2. The current rung is the furthest one tried so far (the first at the start). Not yet
   delivered there:
   - never tried → send at its time (now; a person at the block's time plus their
     ``after``) — or, for a person in their quiet hours then, ``quiet``: skipped, nothing
     sent, and the next person asked at once (the last person is asked when their quiet
     hours end: somebody is always told);
   - the last try failed hard (not configured, unknown channel, a 4xx other than 429, a
     quiet skip) or :data:`RUNG_TRIES` tries failed → the next rung, now (with no next
     rung: back off);
   - otherwise retry after ``retry_backoff`` × 2^(failed sends − 1), capped at
     ``retry_backoff_max`` (a try retried within one send — ``within_send`` — is not a send
     of its own) — or the next person when their ``after`` comes first.
3. Delivered on the current rung: the next rung after ``escalate_after`` without an answer
   (the next person: when their ``after`` passes), and a reminder every ``remind_every``
   (when set) up to ``max_reminders``, whichever comes first. A ``none`` rung is skipped:
   it sends nothing.

Follow-ups (how a request ended, told to whoever was asked; PagerDuty's acknowledge) are
entries of the record too, but no sends of the ladder: the plan never counts them.
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
    from loopkit.config.people import Person
    from loopkit.requests.models import DeliveryAttempt
    from loopkit.requests.record import Request

RUNG_TRIES = 3  # failed tries on one rung before the next is tried as well
IN_FLIGHT_GRACE = 60.0  # seconds an attempt may be in flight before it counts as cut short
if TYPE_CHECKING:
    Kind = Literal["message", "repeat", "reminder", "quiet"]
QUIET: Kind = "quiet"  # a person's skip: in their quiet hours when their turn came


@record(frozen=True, slots=True)
class Rung:
    """One step of the ladder: a channel, and the person reached on it (None: the channel's
    own address, from the environment)."""

    channel: str
    person: Person | None = None

    @property
    def who(self) -> str | None:
        return self.person.name if self.person is not None else None

    def holds(self, entry: DeliveryAttempt) -> bool:
        """Whether ``entry`` is one of this rung's sends."""
        return entry.is_send and entry.channel == self.channel and entry.person == self.who


@record(frozen=True, slots=True)
class Due:
    """Send ``kind`` over ``channel`` (to ``person``, when the ladder is of people) at
    ``at`` (UTC). ``quiet``: record that the person was skipped; nothing is sent."""

    channel: str
    at: datetime
    kind: Kind = "message"
    person: str | None = None


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


def rungs(settings: EscalationConfig) -> list[Rung]:
    """The ladder: the people in order, else the channels (``none`` sends nothing)."""
    if settings.people:
        return [Rung(person.channel, person) for person in settings.people]
    return [Rung(name) for name in settings.ladder if name != "none"]


def sends(record: Request) -> list[DeliveryAttempt]:
    """The record's sends, without its follow-ups."""
    return [entry for entry in record.delivery if entry.is_send]


def current_rung(record: Request, ladder: list[Rung]) -> int:
    """The furthest rung tried so far (0 before any try)."""
    tried = [i for i, rung in enumerate(ladder) for e in record.delivery if rung.holds(e)]
    return max(tried, default=0)


def rung_of(ladder: list[Rung], channel: str, person: str | None = None) -> Rung:
    """The rung ``channel`` (and ``person``) names; a channel the ladder no longer has (the
    settings changed) is a rung of its own."""
    for rung in ladder:
        if rung.channel == channel and rung.who == person:
            return rung
    return Rung(channel)


def delivered_at(record: Request, channel: str, person: str | None = None) -> datetime | None:
    """When the block's message first reached ``channel`` (``person``'s), if it did."""
    for entry in _delivered(record, channel, person):
        return _at(entry)
    return None


def message_id(record: Request, channel: str, person: str | None = None) -> int | str | None:
    """The id of the message delivered on ``channel`` (to ``person``): a reminder replies to
    it, an outcome edits it."""
    for entry in _delivered(record, channel, person):
        return entry.message_id
    return None


def _delivered(record: Request, channel: str, person: str | None) -> list[DeliveryAttempt]:
    """The block's message (never a reminder) as it reached ``channel`` (``person``'s)."""
    return [e for e in record.delivery if e.is_send and e.channel == channel
            and e.person == person and e.ok is True and not e.reminder]  # fmt: skip


def asked(record: Request, ladder: list[Rung], before: int) -> list[str]:
    """The people of the rungs before ``before`` whose message arrived: "(also asked: …)"."""
    names = []
    for rung in ladder[:before]:
        if rung.who and delivered_at(record, rung.channel, rung.who) is not None:
            names.append(rung.who)
    return names


def _due(rung: Rung, at: datetime, kind: Kind = "message") -> Due:
    return Due(rung.channel, at, kind, rung.who)


def _turn(record: Request, rung: Rung, now: datetime) -> datetime:
    """When ``rung`` is due by the clock alone: a person's ``after`` from the block."""
    if rung.person is None or not rung.person.after:
        return now
    try:
        start = clock.parse_iso(record.asked_at)
    except ValueError:
        return now
    return start + timedelta(seconds=rung.person.after)


def next_due(record: Request, settings: EscalationConfig, now: datetime) -> Due | None:
    """The next send for ``record``, or None when there is nothing left to send."""
    ladder = rungs(settings)
    if not record.is_open or not ladder:
        return None
    for entry in record.delivery:
        if entry.in_flight and entry.is_send and any(r.holds(entry) for r in ladder):
            started = _at(entry) or now
            flying = rung_of(ladder, str(entry.channel), entry.person)
            return _due(flying, started + timedelta(seconds=IN_FLIGHT_GRACE), "repeat")
    rung = current_rung(record, ladder)
    current = ladder[rung]
    reached = delivered_at(record, current.channel, current.who)
    if reached is None:
        return _until_delivered(record, settings, ladder, rung, now)
    options: list[Due] = []
    if rung + 1 < len(ladder):
        following = ladder[rung + 1]
        if following.person is not None:
            turn = max(now, _turn(record, following, now))
            options.append(_asked(record, ladder, rung + 1, turn, now))
        elif settings.escalate_after:
            options.append(_due(following, reached + timedelta(seconds=settings.escalate_after)))
    reminders = sum(1 for e in record.delivery if e.is_send and e.reminder)
    if settings.remind_every and reminders < settings.max_reminders:
        wait = settings.remind_every * (reminders + 1)
        options.append(_due(current, reached + timedelta(seconds=wait), "reminder"))
    return min(options, key=lambda due: due.at, default=None)


def _asked(record: Request, ladder: list[Rung], index: int, at: datetime, now: datetime) -> Due:
    """Rung ``index``'s first send at ``at`` — a quiet skip when its person is in their
    quiet hours by then (the last person instead waits for the hours to end)."""
    rung = ladder[index]
    person = rung.person
    if person is None or at > now or not person.is_quiet(at):
        return _due(rung, at)
    if index + 1 < len(ladder):
        return _due(rung, at, QUIET)
    assert person.quiet is not None
    return _due(rung, person.quiet.ends(at))


def _until_delivered(
    record: Request, settings: EscalationConfig, ladder: list[Rung], rung: int, now: datetime
) -> Due:
    current = ladder[rung]
    tries = [e for e in record.delivery if current.holds(e) and not e.reminder]
    if not tries:
        return _asked(record, ladder, rung, max(now, _turn(record, current, now)), now)
    last = tries[-1]
    sends_made = sum(1 for e in tries if not e.within_send)  # a send's own retry is one send
    if rung + 1 < len(ladder) and (is_hard(last) or sends_made >= RUNG_TRIES):
        return _asked(record, ladder, rung + 1, now, now)
    wait = min(settings.retry_backoff * 2 ** (max(sends_made, 1) - 1), settings.retry_backoff_max)
    retry = _due(current, (_at(last) or now) + timedelta(seconds=wait))
    if rung + 1 < len(ladder) and ladder[rung + 1].person is not None:
        following = _turn(record, ladder[rung + 1], now)
        if following < retry.at:  # the next person's turn comes before this retry
            return _asked(record, ladder, rung + 1, max(now, following), now)
    return retry
