"""The fakes of ntfy and PagerDuty refuse what the real services refuse (their docstrings
name the pages): a fake kinder than the service is a test that cannot fail."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from fakentfy import FakeNtfy
from fakepagerduty import TEST_KEY, FakePagerDuty

ACTION = {"action": "http", "label": "A) Retry", "url": "http://inbox/t/1"}


def publish(ntfy: FakeNtfy, body: Any, path: str = "/", **headers: str) -> httpx.Response:
    return httpx.post(f"{ntfy.url}{path}", json=body, headers=headers, timeout=5)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"message": "no topic"}, 40024),
        ({"topic": "a/b"}, 40009),
        ({"topic": "t" * 65}, 40009),
        ({"topic": "t", "priority": 6}, 40007),
        ({"topic": "t", "priority": "4"}, 40024),
        ({"topic": "t", "actions": [ACTION] * 4}, 40018),
        ({"topic": "t", "actions": [{**ACTION, "action": "open"}]}, 40018),
        ({"topic": "t", "actions": [{**ACTION, "label": ""}]}, 40018),
        ({"topic": "t", "actions": [{"action": "view", "label": "Open"}]}, 40018),
        ({"topic": "t", "actions": [{**ACTION, "method": "GET", "body": "x"}]}, 40018),
        ({"topic": "t", "actions": [{**ACTION, "clear": "yes"}]}, 40024),
        ({"topic": "t", "message": "x" * 4097}, 40014),
    ],
)
def test_ntfy_refuses_what_its_server_refuses(ntfy: FakeNtfy, body: Any, code: int) -> None:
    answer = publish(ntfy, body)
    assert answer.status_code == 400 and answer.json()["code"] == code
    assert ntfy.published == []


def test_ntfy_takes_json_at_the_root_only_and_defaults_http_actions_to_post(
    ntfy: FakeNtfy,
) -> None:
    assert publish(ntfy, {"topic": "t"}, "/t").status_code == 400
    answer = publish(ntfy, {"topic": "t", "actions": [ACTION]})
    assert answer.status_code == 200
    assert answer.json()["actions"][0]["method"] == "POST"
    too_big = httpx.post(f"{ntfy.url}/", content=b"{" + b" " * 9000 + b"}", timeout=5)
    assert too_big.status_code == 413


def test_ntfy_protected_topics_want_their_token(ntfy: FakeNtfy) -> None:
    ntfy.tokens["t"] = "tk_right"
    assert publish(ntfy, {"topic": "t"}).status_code == 403
    assert publish(ntfy, {"topic": "t"}, Authorization="Bearer tk_wrong").status_code == 401
    assert publish(ntfy, {"topic": "t"}, Authorization="Bearer tk_right").status_code == 200


def enqueue(pd: FakePagerDuty, event: Any) -> httpx.Response:
    return httpx.post(f"{pd.url}/v2/enqueue", json=event, timeout=5)


TRIGGER = {"routing_key": TEST_KEY, "event_action": "trigger", "dedup_key": "r1",
           "payload": {"summary": "s", "source": "loopkit", "severity": "error"}}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"routing_key": None}, "routing_key"),
        ({"routing_key": TEST_KEY[:-1]}, "should be 32 characters"),
        ({"routing_key": "Y" * 32}, "Invalid routing key"),
        ({"event_action": "open"}, "event_action"),
        ({"payload": None}, "payload"),
        ({"payload": {"summary": "s", "source": "x", "severity": "fatal"}}, "severity"),
        ({"payload": {"summary": "", "source": "x", "severity": "info"}}, "summary"),
        ({"payload": {"summary": "s" * 1025, "source": "x", "severity": "info"}}, "too long"),
        ({"payload": {"summary": "s", "source": "", "severity": "info"}}, "source"),
        ({"dedup_key": "k" * 256}, "dedup_key"),
        ({"event_action": "resolve", "dedup_key": None}, "dedup_key"),
    ],
)
def test_pagerduty_refuses_an_invalid_event(
    pagerduty: FakePagerDuty, change: dict[str, Any], error: str
) -> None:
    event = {k: v for k, v in {**TRIGGER, **change}.items() if v is not None}
    answer = enqueue(pagerduty, event)
    assert answer.status_code == 400, answer.text
    assert answer.json()["status"] == "invalid event"
    assert any(error in e for e in answer.json()["errors"])
    assert pagerduty.events == []


def test_pagerduty_dedups_as_documented(pagerduty: FakePagerDuty) -> None:
    resolve = {"routing_key": TEST_KEY, "event_action": "resolve", "dedup_key": "r1"}
    assert enqueue(pagerduty, resolve).status_code == 202  # no open alert: dropped
    assert pagerduty.alerts == [] and pagerduty.dropped == [resolve]
    assert enqueue(pagerduty, TRIGGER).json() == {
        "status": "success", "message": "Event processed", "dedup_key": "r1"
    }  # fmt: skip
    assert enqueue(pagerduty, TRIGGER).status_code == 202  # the same open alert
    assert len(pagerduty.alerts) == 1 and len(pagerduty.alerts[0].events) == 2
    assert enqueue(pagerduty, resolve).status_code == 202
    assert enqueue(pagerduty, TRIGGER).status_code == 202  # after a resolve: a new alert
    assert [a.status for a in pagerduty.alerts] == ["resolved", "triggered"]
    unkeyed = enqueue(pagerduty, {k: v for k, v in TRIGGER.items() if k != "dedup_key"})
    assert unkeyed.json()["dedup_key"] not in ("r1", "")
    assert httpx.post(f"{pagerduty.url}/v2/enqueue", content=b"{", timeout=5).status_code == 400
