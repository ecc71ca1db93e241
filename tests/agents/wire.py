"""What the three fake model APIs share: a real HTTP server on 127.0.0.1 in a thread, a
script of what "the model" does, and a record of every request.

A script is a list of steps, consumed in order by the requests that run the agent's loop
(each fake says which requests those are: the ones carrying the agent's tools). A step is
what the model does in one response:

- :class:`Call` — one or more tool calls (the agent runs them and comes back with results);
- :class:`Say` — text, and the turn ends;
- :class:`Fail` — the API answers an HTTP error, with the body the real API sends.

A request the script did not foresee is answered with a short text that ends the turn and
is recorded in :attr:`Api.unforeseen`, so a test can say it expected none. A request the
real API would reject (a missing header, a malformed body, a tool call left without its
result) is rejected the same way and recorded in :attr:`Api.rejected`: the fakes are at
least as strict as the real services.

The server speaks HTTP/1.1 with keep-alive; a streamed answer goes out with
``Transfer-Encoding: chunked``, an event per chunk, as the real APIs send server-sent
events (https://html.spec.whatwg.org/multipage/server-sent-events.html).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import Loopback, QuietHandler


@dataclass
class Call:
    """The model calls ``tool`` with ``input`` (and, with ``more``, other calls at once)."""

    tool: str
    input: dict[str, Any]
    more: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(self.tool, self.input), *self.more]


@dataclass
class Say:
    """The model answers ``text`` and ends its turn."""

    text: str


@dataclass
class Fail:
    """The API answers HTTP ``status`` (the fake writes the real API's error body for it),
    ``times`` times in a row (a client that retries meets it again)."""

    status: int
    times: int = 1
    retry_after: str | None = None


@dataclass
class Repeat:
    """The model makes ``calls`` again and again, in turn (one a response: ``[a]`` is the
    same call each time, ``[a, b]`` an alternation), until a request carries ``until`` — the
    words loopkit resumes a stopped turn with — and the script goes on."""

    calls: list[Call]
    until: str
    made: int = 0

    def next(self) -> Call:
        call = self.calls[self.made % len(self.calls)]
        self.made += 1
        return call


Step = Call | Say | Fail


@dataclass
class Seen:
    """One request as it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    step: Step | None = None  # what the script answered (None: not a turn of the loop)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # a dict is sent as JSON
    headers: dict[str, str] = field(default_factory=dict)
    events: list[tuple[str | None, Any]] | None = None  # server-sent events: (name, data)


class Api(Loopback):
    """A fake model API. Subclasses implement :meth:`answer`."""

    name = "api"

    def __init__(self, script: list[Step | Repeat] | None = None) -> None:
        self.script: list[Step | Repeat] = list(script or [])
        self.seen: list[Seen] = []
        self.unforeseen: list[Seen] = []
        self.rejected: list[tuple[Seen, str]] = []
        self.lock = threading.Lock()
        self._fails_left: dict[int, int] = {}
        api = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "gzip":
                    import gzip

                    raw = gzip.decompress(raw)
                elif self.headers.get("Content-Encoding") == "zstd":
                    raise RuntimeError("zstd bodies are not read by this fake")
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                seen = Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                with api.lock:
                    api.seen.append(seen)
                try:
                    reply = api.answer(seen)
                except Exception as exc:  # the script's own error: the test must see it
                    reply = api.reject(seen, 500, f"the fake failed: {exc!r}",
                                       {"error": {"message": repr(exc)}})  # fmt: skip
                api._send(self, reply)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

        self.serve(Handler)

    # -- the script -------------------------------------------------------------------

    def next_step(self, seen: Seen) -> Step | None:
        """The script's next step for a turn of the agent's loop (a :class:`Fail` stays at
        the head until it has been answered ``times`` times, a :class:`Repeat` until a
        request carries its words)."""
        with self.lock:
            head = self.script[0] if self.script else None
            if isinstance(head, Repeat):
                if head.until not in json.dumps(seen.body, ensure_ascii=False):
                    seen.step = head.next()
                    return seen.step
                self.script.pop(0)
            if not self.script:
                self.unforeseen.append(seen)
                return None
            step = self.script[0]
            if isinstance(step, Fail):
                left = self._fails_left.setdefault(id(step), step.times) - 1
                self._fails_left[id(step)] = left
                if left <= 0:
                    self.script.pop(0)
            else:
                self.script.pop(0)
            seen.step = step
            return step

    def reject(self, seen: Seen, status: int, reason: str, body: Any) -> Reply:
        with self.lock:
            self.rejected.append((seen, reason))
        return Reply(status, body)

    def turns(self) -> list[Seen]:
        """The requests the script answered, in order."""
        with self.lock:
            return [s for s in self.seen if s.step is not None]

    def answer(self, seen: Seen) -> Reply:
        raise NotImplementedError

    # -- HTTP ---------------------------------------------------------------------------

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        handler.send_response(reply.status)
        for key, value in reply.headers.items():
            handler.send_header(key, value)
        if reply.events is not None:
            handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            for chunk in _sse(reply.events):
                handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
            return
        data = json.dumps(reply.body).encode() if reply.body is not None else b""
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()


def _sse(events: list[tuple[str | None, Any]]) -> Iterator[bytes]:
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        head = f"event: {name}\n" if name else ""
        yield f"{head}data: {text}\n\n".encode()
