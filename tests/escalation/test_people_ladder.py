"""The ladder of people (SPEC §29) in the delivery plan — a pure function of the record, the
settings and the time, so every case here is a time handed in, never waited for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from loopkit.config import EscalationConfig
from loopkit.config.people import Person, Quiet
from loopkit.escalation.delivery import QUIET, Due, asked, next_due, rungs
from loopkit.requests.models import DeliveryAttempt
from loopkit.requests.record import Request

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)  # 10:00 in Berlin
ANA = Person("Ana", "ntfy", "https://ntfy.sh/ana", 0.0)
BEN = Person("Ben", "ntfy", "https://ntfy.sh/ben", 1200.0)  # after 20m
CLEO = Person("Cleo", "pagerduty", None, 3600.0)
TEAM = EscalationConfig(people=(ANA, BEN, CLEO), retry_backoff=30.0)


def at(seconds: float) -> str:
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def sent(person: Person, seconds: float, ok: bool | None = True, **more: Any) -> DeliveryAttempt:
    return DeliveryAttempt(channel=person.channel, at=at(seconds), ok=ok, person=person.name,
                           status=200 if ok else more.pop("status", 500), **more)  # fmt: skip


def block(*entries: DeliveryAttempt, status: str = "open") -> Request:
    return Request(request_id="r1", prompt="Q?", created_at=at(0), delivery=list(entries),
                   status=status)  # type: ignore[arg-type]  # fmt: skip


def later(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_first_person_is_asked_at_once_and_the_next_when_their_after_passes() -> None:
    assert next_due(block(), TEAM, T0) == Due("ntfy", T0, "message", "Ana")
    told = block(sent(ANA, 1))
    assert next_due(told, TEAM, later(5)) == Due("ntfy", later(1200), "message", "Ben")
    both = block(sent(ANA, 1), sent(BEN, 1200))
    assert next_due(both, TEAM, later(1300)) == Due("pagerduty", later(3600), "message", "Cleo")
    assert next_due(block(sent(ANA, 1), status="resolved"), TEAM, later(5000)) is None


def test_a_person_who_cannot_be_reached_hands_over_to_the_next_at_once() -> None:
    hard = block(sent(ANA, 1, ok=False, status=403))
    assert next_due(hard, TEAM, later(2)) == Due("ntfy", later(2), "message", "Ben")


def test_a_soft_failure_is_retried_until_the_next_persons_turn_comes() -> None:
    soft = block(sent(ANA, 1, ok=False, status=503))
    assert next_due(soft, TEAM, later(2)) == Due("ntfy", later(31), "message", "Ana")
    many = block(*(sent(ANA, n * 300, ok=False, status=503) for n in range(2)))  # backoff 60 s
    assert next_due(many, TEAM, later(305)).at == later(360)  # type: ignore[union-attr]
    late = block(sent(ANA, 1190, ok=False, status=503))  # the retry would come after 20m
    assert next_due(late, TEAM, later(1195)) == Due("ntfy", later(1200), "message", "Ben")


def test_quiet_hours_skip_to_the_next_person_and_the_last_waits_for_morning() -> None:
    night = Quiet(22 * 60, 7 * 60, "UTC")
    sleepy = Person("Ana", "ntfy", "https://ntfy.sh/ana", 0.0, night)
    settings = EscalationConfig(people=(sleepy, BEN))
    midnight = datetime(2026, 12, 3, 0, 0, tzinfo=UTC)
    record = Request(request_id="r1", prompt="Q?", created_at="2026-12-03T00:00:00Z")
    assert next_due(record, settings, midnight) == Due("ntfy", midnight, QUIET, "Ana")
    skipped = DeliveryAttempt(channel="ntfy", at="2026-12-03T00:00:00.000Z", ok=False,
                              status=QUIET, hard=True, person="Ana")  # fmt: skip
    record.delivery.append(skipped)
    assert next_due(record, settings, midnight) == Due("ntfy", midnight, "message", "Ben")
    # The last person in their quiet hours: asked when they end (somebody is always told).
    alone = EscalationConfig(people=(sleepy,))
    fresh = Request(request_id="r2", prompt="Q?", created_at="2026-12-03T00:00:00Z")
    assert next_due(fresh, alone, midnight) == Due(
        "ntfy", datetime(2026, 12, 3, 7, 0, tzinfo=UTC), "message", "Ana"
    )
    # Awake: asked at once.
    noon = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    day = Request(request_id="r3", prompt="Q?", created_at="2026-12-03T12:00:00Z")
    assert next_due(day, settings, noon) == Due("ntfy", noon, "message", "Ana")


def test_quiet_hours_are_judged_when_a_persons_turn_comes_not_before() -> None:
    evening = Quiet(9 * 60 + 10, 23 * 60, "UTC")  # from 09:10
    ben = Person("Ben", "ntfy", "https://ntfy.sh/ben", 1200.0, evening)
    settings = EscalationConfig(people=(ANA, ben, CLEO))
    told = block(sent(ANA, 1))
    assert next_due(told, settings, later(5)) == Due("ntfy", later(1200), "message", "Ben")
    assert next_due(told, settings, later(1200)) == Due("ntfy", later(1200), QUIET, "Ben")


def test_also_asked_names_those_whose_message_arrived() -> None:
    record = block(sent(ANA, 1), sent(BEN, 1200, ok=False, status=403))
    ladder = rungs(TEAM)
    assert asked(record, ladder, 1) == ["Ana"]
    assert asked(record, ladder, 2) == ["Ana"]  # Ben's never arrived


def test_follow_ups_are_never_counted_as_sends() -> None:
    ack = DeliveryAttempt(channel="pagerduty", at=at(5), ok=True, status=202,
                          followup="acknowledge")  # fmt: skip
    record = block(sent(ANA, 1), ack)
    assert next_due(record, TEAM, later(5)) == Due("ntfy", later(1200), "message", "Ben")
