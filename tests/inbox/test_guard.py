"""The inbox's connection guard in process: a real uvicorn on 127.0.0.1 in a thread, with a
short header deadline and a small bound, so each rule is seen at work in well under a second."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from loopkit.inbox.guard import ConnectionGuard, Limits, body_within, limits, most_open
from loopkit.inbox.serve import _Server

from helpers import wait_until

DEADLINE = 0.4  # the header deadline these tests run with
HALF = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"


class App:
    """Answers 200 at once; ``/hang`` only once ``release`` is set (a request in progress);
    ``/form`` reads its body as the inbox's forms are read (:func:`body_within`, 64 KiB)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        while scope["path"] == "/hang" and not self.release.is_set():
            await asyncio.sleep(0.01)
        status, headers = 200, []
        if scope["path"] == "/form" and await body_within(Request(scope, receive), 65536) is None:
            status, headers = 413, [(b"connection", b"close")]  # as the inbox answers it
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})


class Running:
    def __init__(self, guard: ConnectionGuard) -> None:
        self.app = App()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        self.server = _Server(sock, self.app, guard=guard)
        self.guard = guard
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.server.started, 10, "uvicorn started")
        self.sock = sock

    def connect(self, data: bytes = b"") -> socket.socket:
        conn = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        if data:
            conn.sendall(data)
        return conn

    def get(self, path: str = "/") -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=5)

    def stop(self) -> None:
        self.app.release.set()
        self.server.stop(signal.SIGTERM)
        self.thread.join(10)
        self.sock.close()


@pytest.fixture
def serving() -> Iterator[Running]:
    running = Running(ConnectionGuard(Limits(max_connections=4, header_timeout=DEADLINE)))
    yield running
    running.stop()


def closed_after(conn: socket.socket) -> float:
    """Seconds until the server closes ``conn`` (5 s at most)."""
    start = time.monotonic()
    conn.settimeout(5)
    try:
        while conn.recv(1024):
            pass
    except ConnectionResetError:
        pass
    finally:
        conn.close()
    return time.monotonic() - start


def test_a_connection_that_sends_nothing_is_dropped_at_the_deadline(serving: Running) -> None:
    assert DEADLINE * 0.9 <= closed_after(serving.connect()) < DEADLINE + 1.5


def test_half_a_header_is_dropped_however_slowly_it_trickles(serving: Running) -> None:
    conn = serving.connect(b"GET / HTTP/1.1\r\n")
    start = time.monotonic()
    try:
        for byte in b"Host: 127.0.0.1\r\nX-Slow: " + b"y" * 40:
            conn.sendall(bytes([byte]))  # each byte well within the deadline
            time.sleep(DEADLINE / 8)
    except OSError:
        pass  # dropped mid-trickle
    assert closed_after(conn) + (time.monotonic() - start) < DEADLINE + 1.5
    assert serving.guard.dropped >= 1


def test_headers_in_time_are_answered(serving: Running) -> None:
    assert serving.get().text == "ok"
    assert serving.guard.dropped == 0


def test_a_kept_alive_connection_has_the_deadline_for_its_next_request(
    serving: Running,
) -> None:
    conn = serving.connect(HALF + b"\r\n")
    conn.settimeout(5)
    assert conn.recv(1024).startswith(b"HTTP/1.1 200")
    conn.sendall(HALF)  # the next request's headers, never finished
    assert closed_after(conn) < DEADLINE + 1.5


def test_over_the_bound_the_oldest_waiting_connection_goes(serving: Running) -> None:
    stalled = [serving.connect(HALF) for _ in range(4)]
    wait_until(lambda: len(serving.guard.waiting) == 4, 5, "four waiting")
    assert serving.get().text == "ok"  # a fifth: the oldest stalled one made room
    assert closed_after(stalled[0]) < 1.0
    assert len(serving.guard.open) <= 4
    for conn in stalled[1:]:
        conn.close()


def test_over_the_bound_with_every_connection_busy_the_newcomer_goes(serving: Running) -> None:
    busy = [serving.connect(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n") for _ in range(4)]
    wait_until(lambda: len(serving.guard.open) == 4 and not serving.guard.waiting, 5, "busy")
    with pytest.raises(httpx.TransportError):
        serving.get()
    serving.app.release.set()  # the requests in progress finish, and are answered
    for conn in busy:
        conn.settimeout(5)
        assert conn.recv(1024).startswith(b"HTTP/1.1 200")
        conn.close()


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_over_the_cap_is_answered_413_before_it_is_all_sent(
    serving: Running, declared: bool
) -> None:
    """SPEC §28: a real uvicorn, a body of up to 256 MiB sent a MiB at a time (said in its
    Content-Length, or chunked): 413 comes back long before the end, and the connection
    closes."""
    size = 256 * 1024 * 1024
    framing = f"Content-Length: {size}" if declared else "Transfer-Encoding: chunked"
    conn = serving.connect(f"POST /form HTTP/1.1\r\nHost: x\r\n{framing}\r\n\r\n".encode())
    chunk = b"x" * (1024 * 1024)
    sent, answer = 0, b""
    conn.setblocking(False)
    deadline = time.monotonic() + 30
    while not answer and sent < size and time.monotonic() < deadline:
        try:
            conn.sendall(chunk if declared else b"100000\r\n" + chunk + b"\r\n")
            sent += len(chunk)
        except (BlockingIOError, BrokenPipeError, ConnectionResetError):
            time.sleep(0.01)  # the server reads no more: its answer is on its way
        with contextlib.suppress(BlockingIOError):
            answer = conn.recv(1024)
    conn.setblocking(True)
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert sent < 32 * 1024 * 1024
    assert closed_after(conn) < 5


@pytest.mark.parametrize("nofile", [128, 256, 1024, 4096, 65536, 1048576])
def test_the_bounds_stay_below_the_descriptor_limit(nofile: int) -> None:
    bounds = limits(nofile)
    assert most_open(bounds) <= nofile
    assert 4 <= bounds.max_connections <= 256 and bounds.backlog >= 4
