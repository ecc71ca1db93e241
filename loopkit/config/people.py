"""``[[escalation.people]]`` (SPEC section 29): who may answer, in the order they are asked.

Each person has a ``name`` (how the record, the others' messages and ``loopkit reply --by``
name them), a ``channel`` and an ``address`` on it, ``after`` (how long after the block they
are asked: ``"0m"``, ``"20m"``), and optional ``quiet`` hours (``"22:00-07:00"``) in ``tz``
(an IANA zone, default the machine's). The channel's other settings (a bot's token, the
ntfy server's token) come from the usual environment.

The address names where *this* person is reached; what it is depends on the channel:

- ``telegram``: a chat id (a person's private chat with the bot, or a group);
- ``slack`` (the Slack app, ``slack_mode = "socket"``): a Slack user id (``U…``): the app
  writes to them directly, and only their clicks and replies answer as them;
- ``apprise``: one Apprise URL; ``ntfy``: a topic URL;
- ``dial`` and ``pagerduty``: none (the dial command gets ``LOOPKIT_PERSON``; PagerDuty's own
  schedules choose who is paged).

A topic URL or an Apprise URL carries a secret (whoever knows an ntfy.sh topic reads it):
such addresses are redacted wherever loopkit writes.
"""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

from loopkit.config.values import parse_duration
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime, tzinfo

# Where each channel reaches one person; ``None``: the channel takes no address.
ADDRESS = {
    "telegram": "a chat id, e.g. 123456789 (a person's chat with the bot) or -100… (a group)",
    "slack": "a Slack user id, e.g. U024BE7LH (the app writes to them directly)",
    "apprise": "an Apprise URL, e.g. ntfys://ntfy.sh/ben-topic",
    "ntfy": "an ntfy topic URL, e.g. https://ntfy.sh/ben-topic",
    "dial": None,
    "pagerduty": None,
}
SECRET_ADDRESSES = ("apprise", "ntfy")  # who knows the address reads the messages
_NAME = r"[A-Za-z][A-Za-z0-9 ._'-]{0,39}"
_QUIET = r"([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)"
_KEYS = ("name", "channel", "address", "after", "quiet", "tz")


@record(frozen=True, slots=True)
class Quiet:
    """Quiet hours: from ``start`` to ``end`` (minutes after midnight), in ``tz`` (None: the
    machine's local time). A span past midnight (22:00-07:00) wraps."""

    start: int
    end: int
    tz: str | None = None

    def zone(self) -> tzinfo | None:
        if self.tz is None:
            return None
        from zoneinfo import ZoneInfo  # only where quiet hours name a zone

        return ZoneInfo(self.tz)

    def local(self, moment: datetime) -> datetime:
        zone = self.zone()
        return moment.astimezone(zone) if zone is not None else moment.astimezone()

    def holds(self, moment: datetime) -> bool:
        """Whether ``moment`` (aware) falls in these quiet hours."""
        local = self.local(moment)
        minute = local.hour * 60 + local.minute
        if self.start <= self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end

    def ends(self, moment: datetime) -> datetime:
        """When the quiet hours that hold at ``moment`` end (``moment`` itself when they do
        not hold): the next local ``end`` o'clock, as an aware time."""
        if not self.holds(moment):
            return moment
        local = self.local(moment)
        end = local.replace(hour=self.end // 60, minute=self.end % 60, second=0, microsecond=0)
        if end <= local:
            end += timedelta(days=1)
        # Wall-clock arithmetic in the zone: a DST change between now and then is the zone's.
        return end.astimezone(moment.tzinfo) if moment.tzinfo else end

    @property
    def text(self) -> str:
        start, end = divmod(self.start, 60), divmod(self.end, 60)
        return f"{start[0]:02d}:{start[1]:02d}-{end[0]:02d}:{end[1]:02d}"


@record(frozen=True, slots=True)
class Person:
    """One person of the ladder (see the module)."""

    name: str
    channel: str
    address: str | None = None
    after: float = 0.0  # seconds after the block
    quiet: Quiet | None = None

    @property
    def secret_address(self) -> bool:
        return self.channel in SECRET_ADDRESSES and bool(self.address)

    def is_quiet(self, moment: datetime) -> bool:
        return self.quiet is not None and self.quiet.holds(moment)

    def describe_quiet(self) -> str:
        if self.quiet is None:
            return ""
        zone = f" ({self.quiet.tz})" if self.quiet.tz else ""
        return f"quiet hours {self.quiet.text}{zone}"


def people(value: object) -> tuple[Person, ...]:
    """``[[escalation.people]]`` tables: ``name``, ``channel``, ``address``, ``after``, and
    optional ``quiet`` (``"22:00-07:00"``) and ``tz`` — asked in order."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError(
            "write each person as a [[escalation.people]] table with name, channel, address "
            "and after"
        )
    found: list[Person] = []
    for number, entry in enumerate(value, 1):
        try:
            found.append(_person(entry))
        except ValueError as exc:
            name = entry.get("name")
            who = f" ({name})" if isinstance(name, str) and name.strip() else ""
            raise ValueError(f"person {number}{who}: {exc}") from None
    names = [p.name.lower() for p in found]
    for person in found:
        if names.count(person.name.lower()) > 1:
            raise ValueError(
                f"two people are called {person.name!r}; give each a name of their own"
            )
    for before, person in itertools.pairwise(found):
        if person.after < before.after:
            raise ValueError(
                f"{person.name} (after {_shown(person.after)}) is listed after {before.name} "
                f"(after {_shown(before.after)}): people are asked in order, so `after` never "
                "goes down the list"
            )
    return tuple(found)


def _person(entry: dict[str, object]) -> Person:
    unknown = [key for key in entry if key not in _KEYS]
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    name = entry.get("name")
    if not isinstance(name, str) or not re.fullmatch(_NAME, name.strip()):
        raise ValueError(
            "name: give a short name (letters first; digits, spaces and . _ ' - after), "
            'e.g. name = "Ana"'
        )
    channel = entry.get("channel")
    if channel not in ADDRESS:
        raise ValueError(f"channel: expected one of {', '.join(ADDRESS)}, got {channel!r}")
    address = entry.get("address")
    if address is not None and not isinstance(address, str | int):
        raise ValueError("address: expected a string")
    text = str(address).strip() if address is not None else None
    wanted = ADDRESS[str(channel)]
    if wanted is None and text:
        raise ValueError(f"address: channel {channel} takes none; remove it")
    if wanted is not None and not text:
        raise ValueError(f"address: channel {channel} needs one: {wanted}")
    if text is not None:
        _check_address(str(channel), text)
    after = parse_duration(entry.get("after", 0))
    quiet = _quiet(entry.get("quiet"), entry.get("tz"))
    return Person(name.strip(), str(channel), text or None, after, quiet)


def _check_address(channel: str, text: str) -> None:
    if any(c.isspace() for c in text) or "\x00" in text:
        raise ValueError("address: cannot hold spaces")
    if channel == "telegram" and not re.fullmatch(r"-?[0-9]{1,20}|@[A-Za-z0-9_]{5,32}", text):
        raise ValueError(f"address: {ADDRESS['telegram']}, not {text!r}")
    if channel == "ntfy" and not re.fullmatch(r"https?://[^/?#]+/[-_A-Za-z0-9]{1,64}", text):
        raise ValueError(f"address: {ADDRESS['ntfy']} (the topic 1-64 letters, digits, - or _)")
    if channel == "slack" and not re.fullmatch(r"[UW][A-Z0-9]{2,}", text):
        raise ValueError(f"address: {ADDRESS['slack']}, not {text!r}")
    if channel == "apprise" and "://" not in text:
        raise ValueError(f"address: {ADDRESS['apprise']}")


def _quiet(value: object, tz: object) -> Quiet | None:
    if tz is not None:
        if not isinstance(tz, str) or not tz.strip():
            raise ValueError('tz: expected a time zone name, e.g. "Europe/Berlin"')
        _zone(tz.strip())
    if value is None:
        if tz is not None:
            raise ValueError('tz: set only with quiet hours (quiet = "22:00-07:00")')
        return None
    if not isinstance(value, str):
        raise ValueError('quiet: expected hours such as "22:00-07:00"')
    match = re.fullmatch(_QUIET, value.replace(" ", ""))
    if match is None:
        raise ValueError(f'quiet: expected hours such as "22:00-07:00", got {value!r}')
    h1, m1, h2, m2 = (int(g) for g in match.groups())
    start, end = h1 * 60 + m1, h2 * 60 + m2
    if start == end:
        raise ValueError("quiet: the hours start and end at the same time; give a span")
    return Quiet(start, end, tz.strip() if isinstance(tz, str) else None)


def _zone(name: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"tz: {name!r} is not a time zone this machine knows (e.g. "
                         '"Europe/Berlin", "America/New_York", "UTC")') from None  # fmt: skip


def _shown(seconds: float) -> str:
    if seconds % 3600 == 0 and seconds:
        return f"{seconds / 3600:g}h"
    if seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def find(people: tuple[Person, ...], name: str | None) -> Person | None:
    """The person called ``name`` (case and surrounding spaces ignored), if listed."""
    if not name:
        return None
    wanted = name.strip().lower()
    return next((p for p in people if p.name.lower() == wanted), None)


def names(people: tuple[Person, ...]) -> str:
    return ", ".join(p.name for p in people)
