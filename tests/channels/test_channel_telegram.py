"""Channel ``telegram`` against a real HTTP server on 127.0.0.1 (tests/fakeserver.py)."""

from __future__ import annotations

import socket
import time

import pytest

from loopkit.channels import Outcome
from loopkit.channels.telegram import CALLBACK_DATA_MAX, TelegramChannel
from loopkit.config import ChannelSettings
from loopkit.message import Message

from fakeserver import FakeServer, Reply

TOKEN = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ012345678"
TOKEN_SECRET_PART = TOKEN.split(":", 1)[1]


def _message(request_id: str = "r-20261202-0001", choices: tuple[str, ...] = ()) -> Message:
    return Message(
        request_id=request_id,
        repo="shop",
        at="2026-12-02T13:11:06Z",
        question="Which payment flow?",
        context="Feature: checkout\nFile: pay.py",
        attempted=("read PROMPT.md", "grepped for 'flow'"),
        choices=choices or ("Flow A", "Flow B", "Flow C"),
    )


def _settings(server: FakeServer | None = None, **overrides: object) -> ChannelSettings:
    values: dict[str, object] = {
        "telegram_token": TOKEN,
        "telegram_chat": "42",
        "telegram_api": server.url if server else "http://127.0.0.1:9",
    }
    values.update(overrides)
    return ChannelSettings(**values)  # type: ignore[arg-type]


class Sleeps:
    """An injected ``sleep``: records the wait instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _channel(
    server: FakeServer, sleeps: Sleeps | None = None, **options: object
) -> TelegramChannel:
    return TelegramChannel(_settings(server), sleep=sleeps or Sleeps(), **options)  # type: ignore[arg-type]


def _assert_failed_cleanly(outcome: Outcome) -> None:
    assert outcome.ok is False
    assert outcome.error, "a failure carries a reason"
    assert "\n" not in outcome.error
    assert TOKEN not in outcome.error
    assert TOKEN_SECRET_PART not in outcome.error
    assert "/bot" not in outcome.error  # the URL (token in its path) is never quoted


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _telegram_error(code: int, description: str, **extra: object) -> dict[str, object]:
    return {"ok": False, "error_code": code, "description": description, **extra}


# --- success and the request's shape ----------------------------------------------------------


def test_success_records_message_id(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(200, {"ok": True, "result": {"message_id": 4711}}))
    outcome = _channel(server).send(_message())
    assert outcome == Outcome(ok=True, status=200, message_id=4711)


def test_request_is_one_json_post_to_send_message(server: FakeServer) -> None:
    message = _message(request_id="r-abc", choices=("Flow A", "Flow B", "Flow C"))
    assert _channel(server).send(message).ok is True
    [seen] = server.wait_for("sendMessage")
    assert seen.method == "POST"
    assert seen.path == f"/bot{TOKEN}/sendMessage"
    headers = {key.lower(): value for key, value in seen.headers.items()}
    assert headers["content-type"] == "application/json"
    body = seen.body
    assert isinstance(body, dict)
    assert body["chat_id"] == "42"
    assert body["text"] == message.text
    assert len(body["text"].splitlines()) == 5
    rows = body["reply_markup"]["inline_keyboard"]
    assert rows == [
        [{"text": "A) Flow A", "callback_data": "r-abc:0"}],
        [{"text": "B) Flow B", "callback_data": "r-abc:1"}],
        [{"text": "C) Flow C", "callback_data": "r-abc:2"}],
    ]


def test_one_button_per_choice(server: FakeServer) -> None:
    assert _channel(server).send(_message(request_id="r-two", choices=("Yes", "No"))).ok
    [seen] = server.wait_for("sendMessage")
    buttons = [b for row in seen.body["reply_markup"]["inline_keyboard"] for b in row]
    assert [b["callback_data"] for b in buttons] == ["r-two:0", "r-two:1"]


def test_request_id_too_long_for_callback_data_sends_without_keyboard(
    server: FakeServer,
) -> None:
    long_id = "r" * (CALLBACK_DATA_MAX - 1)  # "<id>:0" is 65 bytes
    assert len(f"{long_id}:0".encode()) > 64
    outcome = _channel(server).send(_message(request_id=long_id))
    assert outcome.ok is True
    [seen] = server.wait_for("sendMessage")
    assert "reply_markup" not in seen.body
    assert seen.body["text"] == _message(request_id=long_id).text


def test_callback_data_of_exactly_64_bytes_keeps_keyboard(server: FakeServer) -> None:
    edge_id = "r" * (CALLBACK_DATA_MAX - 2)  # "<id>:0" is 64 bytes
    assert len(f"{edge_id}:0".encode()) == 64
    assert _channel(server).send(_message(request_id=edge_id, choices=("A", "B"))).ok
    [seen] = server.wait_for("sendMessage")
    rows = seen.body["reply_markup"]["inline_keyboard"]
    assert [row[0]["callback_data"] for row in rows] == [f"{edge_id}:0", f"{edge_id}:1"]


def test_callback_data_limit_counts_bytes_not_characters(server: FakeServer) -> None:
    wide_id = "é" * 31  # 31 characters, 62 bytes: "<id>:0" is 64 bytes, fine
    too_wide = "é" * 32  # 64 bytes before the suffix
    channel = _channel(server)
    assert channel.send(_message(request_id=wide_id)).ok
    assert channel.send(_message(request_id=too_wide)).ok
    first, second = server.wait_for("sendMessage", 2)
    assert "reply_markup" in first.body
    assert "reply_markup" not in second.body


# --- failures ----------------------------------------------------------------------------------


def test_200_with_ok_false_is_a_failure(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(200, {"ok": False, "result": {"message_id": 1}}))
    outcome = _channel(server).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.status == 200
    assert outcome.message_id is None
    assert len(server.calls("sendMessage")) == 1


def test_200_without_json_is_a_failure(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(200, "<html>captive portal</html>"))
    outcome = _channel(server).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.status == 200


def test_400_reports_telegram_description_and_is_not_retried(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(400, _telegram_error(400, "Bad Request: chat not found")))
    sleeps = Sleeps()
    outcome = _channel(server, sleeps).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.status == 400
    assert outcome.error is not None and "Bad Request: chat not found" in outcome.error
    assert len(server.calls("sendMessage")) == 1
    assert sleeps.waits == []


def test_token_echoed_in_description_is_masked(server: FakeServer) -> None:
    server.queue(
        "sendMessage", Reply(401, _telegram_error(401, f"Unauthorized: bot{TOKEN} revoked"))
    )
    outcome = _channel(server).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.error is not None and "Unauthorized" in outcome.error


@pytest.mark.parametrize(
    "reply",
    [
        Reply(429, _telegram_error(429, "Too Many Requests"), headers={"Retry-After": "3"}),
        Reply(
            429,
            _telegram_error(429, "Too Many Requests: retry after 3", parameters={"retry_after": 3}),
        ),
    ],
    ids=["header", "body-parameters"],
)
def test_429_waits_retry_after_then_retries_once(server: FakeServer, reply: Reply) -> None:
    server.queue("sendMessage", reply, Reply(200, {"ok": True, "result": {"message_id": 9}}))
    sleeps = Sleeps()
    outcome = _channel(server, sleeps).send(_message())
    assert (outcome.ok, outcome.status, outcome.message_id) == (True, 200, 9)
    # The 429 is an attempt of its own (SPEC §9: every attempt one entry).
    assert [(t.ok, t.status) for t in outcome.earlier] == [(False, 429)]
    first, second = server.wait_for("sendMessage", 2)
    assert len(server.calls("sendMessage")) == 2
    assert sleeps.waits == [3.0]
    assert second.body == first.body


def test_429_retry_after_beyond_budget_is_not_retried(server: FakeServer) -> None:
    server.queue(
        "sendMessage",
        Reply(429, _telegram_error(429, "Too Many Requests"), headers={"Retry-After": "30"}),
    )
    sleeps = Sleeps()
    outcome = _channel(server, sleeps, budget=10.0).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.status == 429
    assert outcome.error is not None
    assert "30 s" in outcome.error and "budget" in outcome.error
    assert len(server.calls("sendMessage")) == 1
    assert sleeps.waits == []


def test_500_twice_is_a_failure_after_two_requests(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(500, "oops"), Reply(500, "oops again"))
    sleeps = Sleeps()
    outcome = _channel(server, sleeps).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.status == 500
    assert len(server.calls("sendMessage")) == 2
    assert len(sleeps.waits) == 1  # one retry, after the default wait


def test_500_then_200_succeeds(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(502, "bad gateway"))
    outcome = _channel(server).send(_message())
    assert outcome.ok is True
    assert outcome.status == 200
    assert isinstance(outcome.message_id, int)
    assert len(server.calls("sendMessage")) == 2


def test_hang_is_a_timeout_within_budget(server: FakeServer) -> None:
    server.queue("sendMessage", Reply(hang=True))
    started = time.monotonic()
    outcome = _channel(server, budget=0.5).send(_message())
    elapsed = time.monotonic() - started
    _assert_failed_cleanly(outcome)
    assert outcome.status == "timeout"
    assert elapsed < 0.5 + 1.5
    assert len(server.wait_for("sendMessage")) == 1


def test_connection_refused_is_a_failure_not_an_exception() -> None:
    settings = _settings(telegram_api=f"http://127.0.0.1:{_closed_port()}")
    outcome = TelegramChannel(settings, sleep=Sleeps()).send(_message())
    _assert_failed_cleanly(outcome)
    assert outcome.status == "error"


# --- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "variable"),
    [
        ({"telegram_token": None}, "LOOPKIT_HITL_TELEGRAM_TOKEN"),
        ({"telegram_token": ""}, "LOOPKIT_HITL_TELEGRAM_TOKEN"),
        ({"telegram_chat": None}, "LOOPKIT_HITL_TELEGRAM_CHAT"),
        ({"telegram_chat": ""}, "LOOPKIT_HITL_TELEGRAM_CHAT"),
    ],
)
def test_missing_setting_fails_without_a_request(
    server: FakeServer, overrides: dict[str, object], variable: str
) -> None:
    channel = TelegramChannel(_settings(server, **overrides), sleep=Sleeps())
    outcome = channel.send(_message())
    assert outcome.ok is False
    assert outcome.error is not None and variable in outcome.error
    assert TOKEN not in outcome.error
    assert server.requests == []
    assert any(variable in problem for problem in channel.problems())


def test_complete_settings_have_no_problems(server: FakeServer) -> None:
    assert TelegramChannel(_settings(server)).problems() == []
