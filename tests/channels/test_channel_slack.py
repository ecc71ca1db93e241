"""Channel ``slack`` against a real HTTP server on 127.0.0.1 (tests/fakeserver.py)."""

from __future__ import annotations

import socket
import time

import pytest

from loopkit.channels import Outcome
from loopkit.channels.slack import SlackChannel
from loopkit.config import ChannelSettings
from loopkit.message import Message

from fakeserver import FakeServer, Reply

HOOK_PATH = "/services/T000/B000/XXXXSECRET"


def _message() -> Message:
    return Message(
        request_id="r-20261202-0001",
        repo="shop",
        at="2026-12-02T13:11:06Z",
        question="Which payment flow?",
        context="Feature: checkout\nFile: pay.py",
        attempted=("read PROMPT.md",),
        choices=("Flow A", "Flow B"),
    )


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _webhook(server: FakeServer) -> str:
    return server.url + HOOK_PATH


def _channel(server: FakeServer, sleeps: Sleeps | None = None, **options: float) -> SlackChannel:
    settings = ChannelSettings(slack_webhook=_webhook(server))
    return SlackChannel(settings, sleep=sleeps or Sleeps(), **options)


def _assert_failed_cleanly(outcome: Outcome, webhook: str) -> None:
    assert outcome.ok is False
    assert outcome.error, "a failure carries a reason"
    assert "\n" not in outcome.error
    assert webhook not in outcome.error
    assert HOOK_PATH not in outcome.error
    assert "XXXXSECRET" not in outcome.error


def test_success(server: FakeServer) -> None:
    outcome = _channel(server).send(_message())
    assert outcome == Outcome(ok=True, status=200)


def test_body_is_exactly_the_five_lines_as_json(server: FakeServer) -> None:
    message = _message()
    assert _channel(server).send(message).ok is True
    [seen] = server.wait_for("XXXXSECRET")
    assert seen.method == "POST"
    assert seen.path == HOOK_PATH
    headers = {key.lower(): value for key, value in seen.headers.items()}
    assert headers["content-type"] == "application/json"
    assert seen.body == {"text": message.text}
    assert len(seen.body["text"].splitlines()) == 5


def test_400_reports_slack_word_but_never_the_webhook(server: FakeServer) -> None:
    server.queue("XXXXSECRET", Reply(400, "invalid_payload"))
    sleeps = Sleeps()
    outcome = _channel(server, sleeps).send(_message())
    _assert_failed_cleanly(outcome, _webhook(server))
    assert outcome.status == 400
    assert outcome.error is not None and "invalid_payload" in outcome.error
    assert len(server.calls("XXXXSECRET")) == 1  # a 4xx is not retried
    assert sleeps.waits == []


def test_webhook_echoed_in_answer_is_masked(server: FakeServer) -> None:
    server.queue("XXXXSECRET", Reply(404, f"no_service {_webhook(server)}"))
    outcome = _channel(server).send(_message())
    _assert_failed_cleanly(outcome, _webhook(server))
    assert outcome.error is not None and "no_service" in outcome.error


def test_500_is_retried_once_then_succeeds(server: FakeServer) -> None:
    server.queue("XXXXSECRET", Reply(500, "internal_error"))
    sleeps = Sleeps()
    outcome = _channel(server, sleeps).send(_message())
    # The failed first try is an attempt of its own (SPEC §9: every attempt one entry).
    assert outcome == Outcome(
        ok=True, status=200, earlier=(Outcome(False, 500, "HTTP 500: internal_error"),)
    )
    first, second = server.wait_for("XXXXSECRET", 2)
    assert first.body == second.body == {"text": _message().text}
    assert len(sleeps.waits) == 1


def test_500_twice_fails_after_exactly_two_requests(server: FakeServer) -> None:
    server.queue("XXXXSECRET", Reply(503, "unavailable"), Reply(500, "internal_error"))
    outcome = _channel(server).send(_message())
    _assert_failed_cleanly(outcome, _webhook(server))
    assert outcome.status == 500
    assert len(server.calls("XXXXSECRET")) == 2


def test_429_honours_retry_after(server: FakeServer) -> None:
    server.queue("XXXXSECRET", Reply(429, "rate_limited", headers={"Retry-After": "2"}))
    sleeps = Sleeps()
    outcome = _channel(server, sleeps).send(_message())
    assert outcome.ok is True
    assert sleeps.waits == [2.0]
    assert len(server.calls("XXXXSECRET")) == 2


def test_hang_is_a_timeout_within_budget(server: FakeServer) -> None:
    server.queue("XXXXSECRET", Reply(hang=True))
    started = time.monotonic()
    outcome = _channel(server, budget=0.5).send(_message())
    elapsed = time.monotonic() - started
    _assert_failed_cleanly(outcome, _webhook(server))
    assert outcome.status == "timeout"
    assert elapsed < 0.5 + 1.5
    assert len(server.wait_for("XXXXSECRET")) == 1


def test_connection_refused_is_a_failure_not_an_exception() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    webhook = f"http://127.0.0.1:{port}{HOOK_PATH}"
    outcome = SlackChannel(ChannelSettings(slack_webhook=webhook), sleep=Sleeps()).send(_message())
    _assert_failed_cleanly(outcome, webhook)
    assert outcome.status == "error"


@pytest.mark.parametrize("webhook", [None, ""])
def test_missing_webhook_fails_without_a_request(server: FakeServer, webhook: str | None) -> None:
    channel = SlackChannel(ChannelSettings(slack_webhook=webhook), sleep=Sleeps())
    outcome = channel.send(_message())
    assert outcome.ok is False
    assert outcome.error is not None and "LOOPKIT_HITL_SLACK_WEBHOOK" in outcome.error
    assert server.requests == []
    assert channel.problems()


def test_webhook_that_is_not_a_url_fails_without_a_request(server: FakeServer) -> None:
    secretish = "T000/B000/XXXXSECRET"
    channel = SlackChannel(ChannelSettings(slack_webhook=secretish), sleep=Sleeps())
    outcome = channel.send(_message())
    assert outcome.ok is False
    assert outcome.error is not None and "http(s) URL" in outcome.error
    assert secretish not in outcome.error
    assert server.requests == []


def test_valid_webhook_has_no_problems(server: FakeServer) -> None:
    assert SlackChannel(ChannelSettings(slack_webhook=_webhook(server))).problems() == []
