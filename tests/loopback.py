"""An HTTP server of its own on 127.0.0.1, served from a daemon thread: what the fakes of the
services loopkit talks to share (Telegram's Bot API and the webhooks, ntfy, PagerDuty, an
OTLP collector, the agents' model APIs). Each fake is a :class:`Loopback` with a handler
class of its own; the handler answers with :meth:`QuietHandler.answer`."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-request (a poller being stopped, a client timing out) is
    part of the tests, not an error worth socketserver's traceback on the terminal."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that logs nothing, with one way to answer."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def answer(
        self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
    ) -> None:
        """``status`` with ``data`` as a body of type ``kind``, and ``headers``."""
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


class Loopback:
    """The server's life: :meth:`serve` with a handler class (in ``__init__``), then
    :meth:`start` (or ``with``), :meth:`close`."""

    httpd: QuietServer
    thread: threading.Thread

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = QuietServer(("127.0.0.1", 0), handler)
        # A short poll interval makes close() take milliseconds, not serve_forever's 0.5 s.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self.thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
