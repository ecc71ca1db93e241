"""A real HTTP server on 127.0.0.1, in a thread, for the Telegram and Slack shapes.

Tests queue replies per path suffix (``sendMessage``, ``/hook``); every request is recorded
with its path and JSON body. A reply may hang: the handler then waits until the server is
closed, so the client's own timeout is what ends the call.

``getUpdates`` behaves like the Bot API's long poll, with its real semantics: it returns the
pushed updates whose ``update_id`` is at least the requested ``offset`` at once, or holds the
request until one is pushed or the requested ``timeout`` runs out. An ``offset`` confirms
every update before it *for every consumer* (they are gone), and a second ``getUpdates``
while one is held makes the first return 409 Conflict, as Telegram does.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict → JSON; str → text/plain; None → {"ok": true, "result": ...}
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes
    at: float = field(default_factory=time.time)  # when it arrived (wall clock, as mtimes)


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request (a poller being stopped, a client timing out) is
    part of the tests, not an error worth socketserver's traceback on the terminal."""

    def handle_error(self, request: object, client_address: object) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self._replies: dict[str, deque[Reply]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._message_id = 100
        self.updates: list[dict[str, Any]] = []
        self._next_update = 1000
        self._poll_generation = 0  # a new getUpdates ends (409) the one held before it
        self.conflicts = 0  # how many getUpdates it ended with 409
        self.held = 0  # getUpdates being held right now
        self.seen = threading.Condition(self._lock)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                reply = server._record(
                    Seen("POST", self.path, dict(self.headers.items()), body, raw)
                )
                if reply.hang:
                    server._closing.wait(30)
                    return
                payload = reply.body
                status = reply.status
                if payload is None and reply.status == 200 and self.path.endswith("/getUpdates"):
                    status, payload = server._long_poll(body or {})
                if payload is None:
                    payload = server._default_body(self.path, body)
                data = (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                self.send_response(status)
                kind = "text/plain" if isinstance(payload, str) else "application/json"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # A short poll interval makes close() take milliseconds, not serve_forever's 0.5 s.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeServer:
        self.thread.start()
        return self

    def close(self) -> None:
        with self.seen:
            self._closing.set()
            self.seen.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def push_update(self, **update: Any) -> int:
        """Make an update available to getUpdates; returns its update_id."""
        with self.seen:
            self._next_update += 1
            update_id = self._next_update
            self.updates.append({"update_id": update_id, **update})
            self.seen.notify_all()
        return update_id

    def _long_poll(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        offset = int(body.get("offset") or 0)
        hold = float(body.get("timeout") or 0)

        def ready() -> list[dict[str, Any]]:
            return [u for u in self.updates if u["update_id"] >= offset]

        with self.seen:
            if offset:  # confirmed, for everyone: Telegram forgets them
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            self._poll_generation += 1
            mine = self._poll_generation
            self.held += 1
            self.seen.notify_all()
            try:
                self.seen.wait_for(
                    lambda: ready() or self._closing.is_set() or self._poll_generation != mine,
                    timeout=hold,
                )
            finally:
                self.held -= 1
            if self._poll_generation != mine:
                self.conflicts += 1
                conflict = "Conflict: terminated by other getUpdates request"
                return 409, {"ok": False, "error_code": 409, "description": conflict}
            return 200, {"ok": True, "result": ready()}

    def offsets(self) -> list[int | None]:
        """The offset each getUpdates asked for, in order."""
        return [(c.body or {}).get("offset") for c in self.calls("/getUpdates")]

    def queue(self, suffix: str, *replies: Reply) -> None:
        with self._lock:
            self._replies[suffix].extend(replies)

    def _record(self, seen: Seen) -> Reply:
        with self.seen:
            self.requests.append(seen)
            self.seen.notify_all()
            for suffix, replies in self._replies.items():
                if seen.path.endswith(suffix) and replies:
                    return replies.popleft()
            return Reply()

    def _default_body(self, path: str, body: Any) -> Any:
        if path.endswith("/sendMessage"):
            with self._lock:
                self._message_id += 1
                message_id = self._message_id
            return {
                "ok": True,
                "result": {"message_id": message_id, "text": (body or {}).get("text")},
            }
        if "/bot" in path:
            return {"ok": True, "result": True}
        return "ok"

    def calls(self, suffix: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith(suffix)]

    def wait_for(self, suffix: str, count: int = 1, timeout: float = 10.0) -> list[Seen]:
        """Wait (on a condition, with a deadline) until ``count`` calls to ``suffix`` arrived."""
        with self.seen:
            ok = self.seen.wait_for(
                lambda: len([r for r in self.requests if r.path.endswith(suffix)]) >= count,
                timeout,
            )
        assert ok, f"expected {count} call(s) to {suffix}, got {len(self.calls(suffix))}"
        return self.calls(suffix)
