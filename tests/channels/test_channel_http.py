"""The shared bounded JSON POST (loopkit.channels.http) and the channel registry."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator

import httpx
import pytest

from loopkit import channels
from loopkit.channels import CHANNELS, Outcome
from loopkit.channels.dial import DialChannel
from loopkit.channels.http import DEFAULT_RETRY_WAIT, Response, post_json
from loopkit.channels.none import NoChannel
from loopkit.channels.slack import SlackChannel
from loopkit.channels.telegram import TelegramChannel
from loopkit.config import ChannelSettings
from loopkit.errors import ConfigError
from loopkit.message import Message
from loopkit.redact import Redactor

from fakeserver import FakeServer, Reply

PAYLOAD = {"text": "hello"}


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(follow_redirects=False) as c:
        yield c


def _post(
    client: httpx.Client, server: FakeServer, sleeps: Sleeps, budget: float = 10.0
) -> Response:
    return post_json(
        client,
        server.url + "/hook",
        PAYLOAD,
        budget=budget,
        redactor=Redactor(),
        sleep=sleeps,
    )


def test_2xx_returns_the_parsed_body(client: httpx.Client, server: FakeServer) -> None:
    server.queue("/hook", Reply(201, {"id": 5}))
    answer = _post(client, server, Sleeps())
    assert answer.ok is True
    assert answer.status == 201
    assert answer.body == {"id": 5}
    assert answer.error is None
    [seen] = server.wait_for("/hook")
    assert seen.body == PAYLOAD


def test_5xx_without_retry_after_waits_the_default(
    client: httpx.Client, server: FakeServer
) -> None:
    server.queue("/hook", Reply(503, "busy"))
    sleeps = Sleeps()
    assert _post(client, server, sleeps).ok is True
    assert sleeps.waits == [DEFAULT_RETRY_WAIT]


def test_5xx_with_unreadable_retry_after_waits_the_default(
    client: httpx.Client, server: FakeServer
) -> None:
    server.queue("/hook", Reply(503, "busy", headers={"Retry-After": "soon-ish"}))
    sleeps = Sleeps()
    assert _post(client, server, sleeps).ok is True
    assert sleeps.waits == [DEFAULT_RETRY_WAIT]


def test_retry_after_as_an_http_date(client: httpx.Client, server: FakeServer) -> None:
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    server.queue("/hook", Reply(429, "slow down", headers={"Retry-After": when}))
    sleeps = Sleeps()
    assert _post(client, server, sleeps).ok is True
    [wait] = sleeps.waits
    assert 3.0 < wait <= 5.0


def test_negative_retry_after_in_body_does_not_raise(
    client: httpx.Client, server: FakeServer
) -> None:
    server.queue("/hook", Reply(429, {"ok": False, "parameters": {"retry_after": -3}}))
    sleeps = Sleeps()
    assert _post(client, server, sleeps).ok is True
    assert sleeps.waits == [0.0]  # time.sleep(-3) would raise ValueError


def test_other_5xx_and_4xx_are_not_retried(client: httpx.Client, server: FakeServer) -> None:
    server.queue("/hook", Reply(501, "not implemented"), Reply(404, "no_service"))
    sleeps = Sleeps()
    first = _post(client, server, sleeps)
    second = _post(client, server, sleeps)
    assert (first.status, second.status) == (501, 404)
    assert second.error == "HTTP 404: no_service"
    assert len(server.calls("/hook")) == 2
    assert sleeps.waits == []


def test_redirect_is_not_followed(client: httpx.Client, server: FakeServer) -> None:
    server.queue("/hook", Reply(302, "moved", headers={"Location": server.url + "/elsewhere"}))
    answer = _post(client, server, Sleeps())
    assert answer.ok is False
    assert answer.status == 302
    assert server.calls("/elsewhere") == []


def test_long_or_binary_text_is_not_quoted(client: httpx.Client, server: FakeServer) -> None:
    server.queue("/hook", Reply(400, "<html>" + "x" * 500 + "</html>"))
    answer = _post(client, server, Sleeps())
    assert answer.error == "HTTP 400"


def test_retry_that_would_overrun_the_budget_is_not_made(
    client: httpx.Client, server: FakeServer
) -> None:
    server.queue("/hook", Reply(500, "oops"))
    sleeps = Sleeps()
    answer = _post(client, server, sleeps, budget=0.5)  # the default 1 s wait does not fit
    assert answer.ok is False
    assert answer.status == 500
    assert answer.error is not None and "beyond the 0.5 s budget" in answer.error
    assert len(server.calls("/hook")) == 1
    assert sleeps.waits == []


def test_redactor_masks_secrets_in_errors(client: httpx.Client, server: FakeServer) -> None:
    server.queue("/hook", Reply(403, "denied for s3cr3t-value"))
    answer = post_json(
        client,
        server.url + "/hook",
        PAYLOAD,
        budget=10.0,
        redactor=Redactor(["s3cr3t-value"]),
        sleep=Sleeps(),
    )
    assert answer.error == "HTTP 403: denied for ***"


# --- registry ----------------------------------------------------------------------------------


def test_unknown_channel_is_a_config_error_listing_valid_names() -> None:
    with pytest.raises(ConfigError) as caught:
        channels.create("nope", ChannelSettings())
    text = str(caught.value)
    assert "'nope'" in text
    for name in ("telegram", "slack", "dial", "none"):
        assert name in text
    assert set(CHANNELS) == {"telegram", "slack", "dial", "apprise", "ntfy", "pagerduty", "none"}


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("telegram", TelegramChannel),
        ("slack", SlackChannel),
        ("dial", DialChannel),
        ("none", NoChannel),
    ],
)
def test_create_builds_each_channel_with_options(name: str, cls: type) -> None:
    channel = channels.create(name, ChannelSettings(), budget=2.5)
    assert isinstance(channel, cls)
    assert channel.name == name
    if name in ("telegram", "slack"):
        assert channel.budget == 2.5


def test_none_sends_nothing(server: FakeServer) -> None:
    message = Message(
        request_id="r-1",
        repo="shop",
        at="2026-12-02T13:11:06Z",
        question="Q?",
        context="",
        attempted=(),
        choices=(),
    )
    settings = ChannelSettings(telegram_api=server.url, slack_webhook=server.url + "/hook")
    channel = channels.create("none", settings)
    assert channel.send(message) == Outcome(ok=None)
    assert channel.problems() == []
    assert server.requests == []
