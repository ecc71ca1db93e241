"""The delivery plan: a pure function of the record's attempts, the settings and the time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from loopkit.config import EscalationConfig
from loopkit.datarecord import replace
from loopkit.escalation.delivery import RUNG_TRIES, Due, next_due
from loopkit.requests.models import DeliveryAttempt
from loopkit.requests.record import Request

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
SETTINGS = EscalationConfig(ladder=("telegram", "dial"), retry_backoff=30.0)


def at(seconds: float) -> str:
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def entry(
    channel: str, seconds: float, ok: bool | None, status: Any = None, **more: Any
) -> DeliveryAttempt:
    return DeliveryAttempt(channel=channel, at=at(seconds), ok=ok, status=status,
                           message_id=7 if ok else None, **more)  # fmt: skip


def record(*entries: DeliveryAttempt, status: str = "open") -> Request:
    return Request(request_id="r1", prompt="Q?", created_at=at(0), delivery=list(entries),
                   status=status)  # type: ignore[arg-type]  # fmt: skip


def test_a_new_block_goes_to_the_first_rung_now() -> None:
    assert next_due(record(), SETTINGS, T0) == Due("telegram", T0)


def test_nothing_is_sent_for_channel_none_or_a_closed_request() -> None:
    assert next_due(record(), EscalationConfig(), T0) is None
    assert next_due(record(status="resolved"), SETTINGS, T0) is None
    assert next_due(record(status="expired"), SETTINGS, T0) is None


def test_a_soft_failure_is_retried_with_a_doubling_backoff_capped() -> None:
    one = record(entry("telegram", 0, False, 500))
    assert next_due(one, SETTINGS, T0).at == T0 + timedelta(seconds=30)  # type: ignore[union-attr]
    single = replace(SETTINGS, ladder=("slack",))
    tries = [entry("slack", n, False, 503) for n in range(8)]
    due = next_due(record(*tries), single, T0)
    assert due is not None and due.channel == "slack"
    assert due.at == T0 + timedelta(seconds=7) + timedelta(seconds=900)  # 30 × 2^7 capped at 15 m
    two = next_due(record(*tries[:2]), single, T0)
    assert two is not None and two.at == T0 + timedelta(seconds=1 + 60)


def test_a_hard_failure_moves_to_the_next_rung_at_once() -> None:
    for hard in (entry("telegram", 0, False, 404), entry("telegram", 0, False, "error", hard=True)):
        assert next_due(record(hard), SETTINGS, T0 + timedelta(seconds=1)) == Due(
            "dial", T0 + timedelta(seconds=1)
        )
    rate = entry("telegram", 0, False, 429)  # 429 is not hard: back off
    assert next_due(record(rate), SETTINGS, T0).channel == "telegram"  # type: ignore[union-attr]


def test_retries_exhausted_on_a_rung_move_on() -> None:
    tries = [entry("telegram", n, False, 502) for n in range(RUNG_TRIES)]
    assert next_due(record(*tries), SETTINGS, T0) == Due("dial", T0)
    # ... and the last rung keeps being retried, never dropped.
    last = [*tries, *(entry("dial", 10 + n, False, 1) for n in range(RUNG_TRIES))]
    due = next_due(record(*last), SETTINGS, T0)
    assert due is not None and due.channel == "dial" and due.at > T0


def test_delivered_means_nothing_more_unless_escalate_after_or_reminders() -> None:
    done = record(entry("telegram", 0, False, 500), entry("telegram", 30, True, 200))
    assert next_due(done, SETTINGS, T0) is None
    later = replace(SETTINGS, escalate_after=1200.0)
    assert next_due(done, later, T0) == Due("dial", T0 + timedelta(seconds=30 + 1200))
    remind = replace(SETTINGS, remind_every=600.0, max_reminders=2)
    assert next_due(done, remind, T0) == Due("telegram", T0 + timedelta(seconds=630), "reminder")
    once = record(*done.delivery, entry("telegram", 630, True, 200, reminder=True))
    assert next_due(once, remind, T0) == Due("telegram", T0 + timedelta(seconds=1230), "reminder")
    twice = record(*once.delivery, entry("telegram", 1230, True, 200, reminder=True))
    assert next_due(twice, remind, T0) is None  # max_reminders reached


def test_an_attempt_left_in_flight_is_repeated_after_its_grace() -> None:
    cut = record(entry("telegram", 0, None))
    due = next_due(cut, SETTINGS, T0)
    assert due is not None and due.kind == "repeat" and due.at == T0 + timedelta(seconds=60)


def test_a_reminder_that_failed_is_not_a_delivery() -> None:
    failed = record(entry("telegram", 0, False, "error", reminder=True))
    assert next_due(failed, SETTINGS, T0) == Due("telegram", T0)


def test_none_rungs_are_skipped() -> None:
    settings = EscalationConfig(ladder=("none", "slack"))
    assert next_due(record(), settings, T0) == Due("slack", T0)


def test_a_send_s_own_retry_does_not_double_the_backoff() -> None:
    single = replace(SETTINGS, ladder=("slack",))
    send = [entry("slack", 0, False, 500), entry("slack", 1, False, 500, within_send=True)]
    due = next_due(record(*send), single, T0)
    assert due is not None and due.at == T0 + timedelta(seconds=1 + 30)  # one send: 30 s
    two = [*send, entry("slack", 31, False, 503), entry("slack", 32, False, 503, within_send=True)]
    due = next_due(record(*two), single, T0)
    assert due is not None and due.at == T0 + timedelta(seconds=32 + 60)
