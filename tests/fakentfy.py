"""A fake ntfy server on 127.0.0.1: its publish API, and the phone app's action buttons.

Written from ntfy's own pages, read strictly — https://docs.ntfy.sh/publish/ ("Publish as
JSON", "Action buttons" — "Defining actions", "Open website/app", "Send HTTP request" —,
"Click action", "Message priority", "Authentication" — "Access tokens" —, "Limitations")
and the OpenAPI description (https://docs.ntfy.sh/api/, ``docs/api/openapi.yaml``):

- JSON is published by ``PUT``/``POST`` to the server's **root URL** (``/``), never to the
  topic URL; ``topic`` is the only required field and must match ``^[-_A-Za-z0-9]{1,64}$``.
  The body is JSON of at most twice the message limit (8192 bytes), or 413 (code 41303).
  Fields have their types — ``priority`` an integer (a string is invalid JSON for it: 400,
  code 40024), ``tags`` a list of strings, ``actions`` a list of objects, ``markdown`` a
  boolean; fields the server does not know are ignored, as Go's JSON decoding does.
- ``priority``: 1-5 (0 or absent: the default 3); anything else is 400 (40007).
- ``actions``: at most three; each ``action`` one of ``view``, ``broadcast``, ``http``
  (case-insensitive); ``label`` required; ``url`` required for ``view`` and ``http``; an
  ``http`` action's ``method`` defaults to **POST**, and a ``body`` with ``GET``/``HEAD`` is
  refused — all 400 (40018, "invalid request: actions invalid").
- The message is at most 4096 bytes; a longer one would become an attachment, which this
  server (like one without an attachment cache) refuses: 400.
- A protected topic (:attr:`FakeNtfy.tokens`) takes ``Authorization: Bearer <token>``:
  without one 403 (40301 "forbidden"), with a wrong one 401 (40101 "unauthorized").
- Errors are ``{"code", "http", "error", "link"?}``; success is 200 with the message as
  stored: ``id``, ``time``, ``expires``, ``event: "message"``, ``topic`` and the fields
  set (each action with an ``id`` of its own).

The phone's side (https://docs.ntfy.sh/publish/#send-http-request): :meth:`FakeNtfy.tap`
does what the ntfy app does when an action button is tapped — an ``http`` action sends its
``method`` (POST by default) with its ``headers`` and ``body`` to its ``url``; a ``view``
action opens the URL (a GET, as a browser would).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from loopback import Loopback, QuietHandler

TOPIC = r"[-_A-Za-z0-9]{1,64}"
MESSAGE_LIMIT = 4096
JSON_LIMIT = 2 * MESSAGE_LIMIT
ACTIONS = ("view", "broadcast", "http")


@dataclass
class Published:
    """One message as the server stored it, with the request that published it."""

    topic: str
    message: dict[str, Any]
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)  # when it arrived, as file mtimes are

    @property
    def actions(self) -> list[dict[str, Any]]:
        return list(self.message.get("actions") or [])


@dataclass
class Tapped:
    """What the phone got back when a button was tapped."""

    status: int
    body: str


class _Refused(Exception):
    def __init__(
        self, status: int, code: int, error: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(error)
        self.status, self.code, self.error = status, code, error
        self.headers = headers or {}


def _error(status: int, code: int, error: str) -> _Refused:
    return _Refused(status, code, error)


class FakeNtfy(Loopback):
    def __init__(self) -> None:
        self.published: list[Published] = []
        self.tokens: dict[str, str] = {}  # topic → the access token it needs
        # failures a test queues for the next publishes: (status, headers such as Retry-After)
        self.failures: deque[tuple[int, dict[str, str]]] = deque()
        self.seen = threading.Condition()
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self._publish()

            def do_PUT(self) -> None:
                self._publish()

            def _publish(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    status, body, headers = server._handle(self.path, dict(self.headers), raw)
                except _Refused as no:
                    status, headers = no.status, no.headers
                    body = {"code": no.code, "http": no.status, "error": no.error}
                self.answer(status, json.dumps(body).encode(), "application/json", headers)

        self.serve(Handler)

    def topic_url(self, topic: str) -> str:
        return f"{self.url}/{topic}"

    # --- the publish API -------------------------------------------------------------------

    def _handle(
        self, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if path.split("?")[0] != "/":
            # Publishing to /<topic> takes the message as the body, with X-* headers; loopkit
            # publishes JSON, and JSON posted to a topic URL is a plain text message there —
            # which this fake refuses rather than showing raw JSON on a phone.
            raise _error(400, 40024, "invalid request: publish JSON to the root URL")
        if len(raw) > JSON_LIMIT:
            raise _error(413, 41303, "JSON body too large")
        try:
            data = json.loads(raw)
        except ValueError:
            raise _error(400, 40024, "invalid request: request body must be valid JSON") from None
        if not isinstance(data, dict):
            raise _error(400, 40024, "invalid request: request body must be valid JSON")
        message = self._message(data)
        self._authorize(message["topic"], headers)
        with self.seen:
            if self.failures:  # a failure a test queued: 429 with Retry-After, a 5xx …
                status, extra = self.failures.popleft()
                raise _Refused(status, status * 100 + 1, f"fake failure {status}", extra)
            now = int(time.time())
            stored = {"id": secrets.token_hex(6), "time": now, "expires": now + 43200,
                      "event": "message", **message}  # fmt: skip
            self.published.append(Published(message["topic"], stored, headers))
            self.seen.notify_all()
        return 200, stored, {}

    def _message(self, data: dict[str, Any]) -> dict[str, Any]:
        topic = data.get("topic")
        if not isinstance(topic, str):
            raise _error(400, 40024, "invalid request: request body must be valid JSON")
        if not re.fullmatch(TOPIC, topic):
            raise _error(400, 40009, "invalid request: topic invalid")
        typed = {"title": str, "message": str, "click": str, "icon": str, "attach": str,
                 "filename": str, "email": str, "call": str, "delay": str, "cache": str,
                 "firebase": str, "markdown": bool, "priority": int, "tags": list,
                 "actions": list}  # fmt: skip
        for key, kind in typed.items():
            value = data.get(key)
            if value is None:
                continue
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise _error(400, 40024, "invalid request: request body must be valid JSON")
        if any(not isinstance(tag, str) for tag in data.get("tags") or []):
            raise _error(400, 40024, "invalid request: request body must be valid JSON")
        priority = data.get("priority") or 0
        if priority not in (0, 1, 2, 3, 4, 5):
            raise _error(400, 40007, "invalid priority parameter")
        text = data.get("message") or "triggered"
        if len(text.encode()) > MESSAGE_LIMIT:
            raise _error(400, 40014, "invalid request: attachments not allowed")
        message: dict[str, Any] = {"topic": topic, "message": text}
        for key in ("title", "click", "icon", "tags"):
            if data.get(key):
                message[key] = data[key]
        if priority:
            message["priority"] = priority
        actions = data.get("actions") or []
        if actions:
            message["actions"] = self._actions(actions)
        return message

    @staticmethod
    def _actions(actions: list[Any]) -> list[dict[str, Any]]:
        def invalid(why: str) -> _Refused:
            return _error(400, 40018, f"invalid request: actions invalid: {why}")

        if len(actions) > 3:
            raise invalid("only 3 actions allowed")
        stored = []
        for raw in actions:
            if not isinstance(raw, dict):
                raise _error(400, 40024, "invalid request: request body must be valid JSON")
            for key in ("action", "label", "url", "method", "body", "intent"):
                if key in raw and not isinstance(raw[key], str):
                    raise _error(400, 40024, "invalid request: request body must be valid JSON")
            if "clear" in raw and not isinstance(raw["clear"], bool):
                raise _error(400, 40024, "invalid request: request body must be valid JSON")
            for key in ("headers", "extras"):
                value = raw.get(key)
                if value is not None and not (
                    isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
                ):
                    raise _error(400, 40024, "invalid request: request body must be valid JSON")
            action = str(raw.get("action") or "").lower()
            method = str(raw.get("method") or "").upper()
            if action not in ACTIONS:
                raise invalid(f"parameter 'action' cannot be '{action}', valid values are "
                              "'view', 'broadcast' and 'http'")  # fmt: skip
            if not raw.get("label"):
                raise invalid("parameter 'label' is required")
            if action in ("view", "http") and not raw.get("url"):
                raise invalid(f"parameter 'url' is required for action '{action}'")
            if action == "http" and method in ("GET", "HEAD") and raw.get("body"):
                raise invalid(f"parameter 'body' cannot be set if method is {method}")
            one = {"id": secrets.token_hex(5), "action": action, "label": raw["label"],
                   "clear": bool(raw.get("clear"))}  # fmt: skip
            for key in ("url", "headers", "body", "intent", "extras"):
                if raw.get(key):
                    one[key] = raw[key]
            if action == "http":
                one["method"] = method or "POST"  # POST, not GET, unless told
            stored.append(one)
        return stored

    def _authorize(self, topic: str, headers: dict[str, str]) -> None:
        """A token the server does not know is 401; a known one without access to this
        topic, or none on a protected topic, is 403."""
        wanted = self.tokens.get(topic)
        given = {k.lower(): v for k, v in headers.items()}.get("authorization")
        if given is not None and given not in {f"Bearer {t}" for t in self.tokens.values()}:
            raise _error(401, 40101, "unauthorized")
        if wanted is not None and given != f"Bearer {wanted}":
            raise _error(403, 40301, "forbidden")

    # --- what the tests read ---------------------------------------------------------------

    def messages(self, topic: str) -> list[Published]:
        with self.seen:
            return [p for p in self.published if p.topic == topic]

    def wait_for(self, topic: str, count: int = 1, timeout: float = 15.0) -> list[Published]:
        """Wait (on a condition, with a deadline) until ``topic`` has ``count`` messages."""
        with self.seen:
            ok = self.seen.wait_for(
                lambda: len([p for p in self.published if p.topic == topic]) >= count, timeout
            )
        found = self.messages(topic)
        assert ok, f"expected {count} message(s) on {topic}, got {[p.message for p in found]}"
        return found

    # --- the phone -------------------------------------------------------------------------

    @staticmethod
    def tap(published: Published, index: int, timeout: float = 15.0) -> Tapped:
        """Tap action ``index`` of a message, as the ntfy app does."""
        action = published.actions[index]
        if action["action"] == "view":
            request = urllib.request.Request(action["url"], method="GET")
        elif action["action"] == "http":
            body = action.get("body", "").encode() if action.get("body") else None
            request = urllib.request.Request(
                action["url"], data=body, method=action.get("method", "POST"),
                headers=action.get("headers") or {},
            )  # fmt: skip
        else:
            raise AssertionError(f"a {action['action']} action sends no HTTP request")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return Tapped(answer.status, answer.read().decode())
        except urllib.error.HTTPError as error:
            return Tapped(error.code, error.read().decode())
