"""Channel ``pagerduty`` against the fake Events API v2 (tests/fakepagerduty.py): a block
opens an incident keyed by its request id, with the five lines; acknowledge and resolve
follow it; failures are every channel's."""

from __future__ import annotations

from loopkit.channels.pagerduty import PagerDutyChannel
from loopkit.config import ChannelSettings
from loopkit.escalation.delivery import is_hard
from loopkit.message import Message, Notice
from loopkit.requests.models import DeliveryAttempt

from fakepagerduty import TEST_KEY, FakePagerDuty


def channel(fake: FakePagerDuty, key: str | None = TEST_KEY) -> PagerDutyChannel:
    return PagerDutyChannel(
        ChannelSettings(pagerduty_routing_key=key, pagerduty_api=fake.url), budget=5
    )


def block(**more: object) -> Message:
    values: dict[str, object] = {
        "request_id": "20261202-131106-ab12", "repo": "shop", "at": "2026-12-02T13:11:06Z",
        "question": "Verify failed 3 times on prices", "context": "pytest -q",
        "attempted": ("three fixes",), "choices": ("Retry", "Skip", "Abort"),
        "link": "http://laptop.vpn:8765/r/ws/20261202-131106-ab12", **more,
    }  # fmt: skip
    return Message(**values)  # type: ignore[arg-type]


def test_a_block_triggers_an_incident_keyed_by_its_request(pagerduty: FakePagerDuty) -> None:
    message = block()
    outcome = channel(pagerduty).send(message)
    assert outcome.ok and outcome.status == 202 and outcome.message_id == message.request_id
    alert = pagerduty.alert(message.request_id)
    assert alert is not None and alert.status == "triggered"
    [event] = alert.events
    payload = event["payload"]
    assert payload["summary"] == message.text  # the five lines
    details = payload["custom_details"]
    assert details["question"] == "Verify failed 3 times on prices"
    assert details["choices"] == "A) Retry | B) Skip | C) Abort"
    assert payload["severity"] == "error" and payload["source"] == "loopkit: shop"
    assert event["links"] == [{"href": message.link, "text": "Answer in the loopkit inbox"}]


def test_p0_is_critical(pagerduty: FakePagerDuty) -> None:
    channel(pagerduty).send(block(p0=True))
    alert = pagerduty.alert("20261202-131106-ab12")
    assert alert is not None and alert.events[0]["payload"]["severity"] == "critical"


def test_acknowledge_then_resolve_the_same_incident(pagerduty: FakePagerDuty) -> None:
    pd = channel(pagerduty)
    assert pd.send(block()).ok
    assert pd.event("acknowledge", "20261202-131106-ab12").ok
    assert pagerduty.wait_for("20261202-131106-ab12", "acknowledged")
    assert pd.event("resolve", "20261202-131106-ab12").ok
    alert = pagerduty.wait_for("20261202-131106-ab12", "resolved")
    assert alert.actions == ["trigger", "acknowledge", "resolve"]
    assert len(pagerduty.alerts) == 1


def test_a_bad_integration_key_is_a_hard_failure_named_and_never_shown(
    pagerduty: FakePagerDuty,
) -> None:
    for key in ("short", "X" * 32):
        outcome = channel(pagerduty, key).send(block())
        assert outcome.ok is False and outcome.status == 400
        assert is_hard(DeliveryAttempt(channel="pagerduty", ok=False, status=outcome.status))
        assert key not in str(outcome.error)
    assert "routing_key" in str(channel(pagerduty, "short").send(block()).error)
    missing = channel(pagerduty, None)
    assert missing.problems() and "LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY" in missing.problems()[0]
    assert missing.send(block()).hard


def test_a_rate_limit_is_retried_after_its_wait(pagerduty: FakePagerDuty) -> None:
    pagerduty.failures.append((429, {"Retry-After": "0"}))
    outcome = channel(pagerduty).send(block())
    assert outcome.ok and [e.status for e in outcome.earlier] == [429]


def test_a_notice_pages_nobody(pagerduty: FakePagerDuty) -> None:
    outcome = channel(pagerduty).send(Notice("shop", "Claude Code is waiting for your input"))
    assert outcome.ok is None and pagerduty.events == []
