"""UTC timestamps in the two shapes loopkit writes.

``iso_seconds`` (``2026-12-02T13:11:06Z``) is for humans: the message, ``created_at``.
``iso_millis`` (``2026-12-02T13:11:06.123Z``) is for ``updated_at``, which scripts compare
for optimistic concurrency, so two writes in the same second must still differ.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


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
