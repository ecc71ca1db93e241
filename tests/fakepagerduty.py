"""A fake PagerDuty Events API v2 on 127.0.0.1, with the incidents its events make.

Written from PagerDuty's own pages, read strictly — "Events API v2 Overview" (response codes
and retry logic, the 512 KB size limit, PD-CEF), "Send an Alert Event" (the parameters,
alert de-duplication, event action behavior) and "Events API Rate Limits"
(https://developer.pagerduty.com/docs/events-api-v2/overview/,
https://developer.pagerduty.com/docs/events-api-v2/trigger-events/,
https://developer.pagerduty.com/docs/events-api-v2/rate-limits/), and the OpenAPI
description (``PagerDuty/api-schema``, ``reference/events-v2/openapiv3.json``):

- Only ``POST /v2/enqueue`` with a JSON object; anything else is 404, a body that is not
  JSON 400, one over 512 KB 413.
- ``routing_key`` is required: the 32-character integration key of an Events API v2
  integration — of a wrong length 400 ("Length of 'routing_key' is incorrect (should be 32
  characters)"), one no integration has 400 too (a fake as strict as can be: the real
  service may take it and drop the event; a test must not count on either).
- ``event_action`` is ``trigger``, ``acknowledge`` or ``resolve``, else 400.
- ``dedup_key`` (a string of at most 255 characters) is required for ``acknowledge`` and
  ``resolve``; a ``trigger`` without one gets a fresh key, returned.
- A ``trigger`` needs ``payload`` with ``summary`` (a string, at most 1024 characters),
  ``source`` (a non-empty string) and ``severity`` (``critical``, ``error``, ``warning``,
  ``info``); ``timestamp`` when given is ISO 8601; ``custom_details`` an object;
  ``component``, ``group``, ``class``, ``client``, ``client_url`` strings; ``links`` objects
  with ``href``, ``images`` objects with ``src`` (https).
- 400 answers ``{"status": "invalid event", "message": "Event object is invalid", "errors":
  [...]}``; 202 ``{"status": "success", "message": "Event processed", "dedup_key": …}``.
- About 120 events a minute per integration key; more is 429 ("Request Limit Exceeded").

Alert de-duplication, as the page describes it: a ``trigger`` with the ``dedup_key`` of an
open alert adds to it, else opens a new one; ``acknowledge`` and ``resolve`` apply to the
open alert with that key and the same routing key — and are dropped (still 202) when there
is none. A resolved alert takes no more events: a later ``trigger`` opens a new one.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from loopback import Loopback, QuietHandler

KEY_LENGTH = 32
MAX_BODY = 512 * 1024
MAX_SUMMARY = 1024
MAX_DEDUP = 255
SEVERITIES = ("critical", "error", "warning", "info")
ACTIONS = ("trigger", "acknowledge", "resolve")
RATE = 120  # events a minute per integration key
TEST_KEY = "R0UT1NGKEY0F32CHARACTERS00000000"  # an integration key's shape, for the tests


@dataclass
class Alert:
    """One alert (an incident, here): its key, state and every event applied to it."""

    routing_key: str
    dedup_key: str
    status: str = "triggered"  # → acknowledged → resolved
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def actions(self) -> list[str]:
        return [e["event_action"] for e in self.events]


class _Invalid(Exception):
    def __init__(self, *errors: str) -> None:
        super().__init__("; ".join(errors))
        self.errors = list(errors)


class FakePagerDuty(Loopback):
    def __init__(self, *keys: str) -> None:
        self.keys = set(keys)  # the integration keys of the services
        self.alerts: list[Alert] = []
        self.events: list[dict[str, Any]] = []  # every event taken, in order
        self.arrived: list[float] = []  # when each arrived (wall clock, as file mtimes)
        self.dropped: list[dict[str, Any]] = []  # acknowledge/resolve with no open alert
        self.failures: deque[tuple[int, dict[str, str]]] = deque()  # a test's next answers
        self.seen = threading.Condition()
        self._sent: dict[str, deque[float]] = {}
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                status, body, headers = server._handle(self.path, raw)
                self.answer(status, json.dumps(body).encode(), "application/json", headers)

            def do_GET(self) -> None:
                self.answer(404, b"", "text/plain")

        self.serve(Handler)

    # --- the API ---------------------------------------------------------------------------

    def _handle(self, path: str, raw: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        if path != "/v2/enqueue":
            return 404, {"status": "Not Found", "message": "Not Found"}, {}
        if len(raw) > MAX_BODY:
            return 413, {"status": "invalid request", "message": "Request too large"}, {}
        try:
            event = json.loads(raw)
        except ValueError:
            return 400, {"status": "Unrecognized object", "message": "Event object format is "
                         "unrecognized", "errors": ["JSON parse error"]}, {}  # fmt: skip
        try:
            self._check(event)
        except _Invalid as bad:
            return 400, {"status": "invalid event", "message": "Event object is invalid",
                         "errors": bad.errors}, {}  # fmt: skip
        with self.seen:
            if self.failures:
                status, headers = self.failures.popleft()
                return status, {"status": "error", "message": f"fake failure {status}"}, headers
            sent = self._sent.setdefault(event["routing_key"], deque())
            now = time.monotonic()
            while sent and now - sent[0] > 60:
                sent.popleft()
            if len(sent) >= RATE:
                return 429, {"status": "throttle event", "message": "Request Limit Exceeded"}, {}
            sent.append(now)
            key = self._apply(event)
            self.events.append(event)
            self.arrived.append(time.time())
            self.seen.notify_all()
        return 202, {"status": "success", "message": "Event processed", "dedup_key": key}, {}

    def _check(self, event: Any) -> None:
        if not isinstance(event, dict):
            raise _Invalid("Event object must be a JSON object")
        key = event.get("routing_key")
        if not isinstance(key, str) or not key:
            raise _Invalid("'routing_key' is missing or blank")
        if len(key) != KEY_LENGTH:
            raise _Invalid("Length of 'routing_key' is incorrect (should be 32 characters)")
        if key not in self.keys:
            raise _Invalid("Invalid routing key")
        action = event.get("event_action")
        if action not in ACTIONS:
            raise _Invalid("'event_action' is invalid (must be one of the following: "
                           "'trigger', 'acknowledge' or 'resolve')")  # fmt: skip
        dedup = event.get("dedup_key")
        if dedup is not None and (not isinstance(dedup, str) or len(dedup) > MAX_DEDUP):
            raise _Invalid("'dedup_key' must be a string of at most 255 characters")
        if action != "trigger" and not dedup:
            raise _Invalid(f"'dedup_key' is required for an {action} event")
        if action == "trigger":
            self._check_payload(event)

    @staticmethod
    def _check_payload(event: dict[str, Any]) -> None:
        payload = event.get("payload")
        if not isinstance(payload, dict):
            raise _Invalid("'payload' is missing or not an object")
        errors = []
        summary = payload.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            errors.append("'payload.summary' is missing or blank")
        elif len(summary) > MAX_SUMMARY:
            errors.append("'payload.summary' is too long (at most 1024 characters)")
        source = payload.get("source")
        if not isinstance(source, str) or not source.strip():
            errors.append("'payload.source' is missing or blank")
        if payload.get("severity") not in SEVERITIES:
            errors.append("'payload.severity' is invalid (must be one of the following: "
                          "'critical', 'warning', 'error' or 'info')")  # fmt: skip
        for key in ("component", "group", "class"):
            if key in payload and not isinstance(payload[key], str):
                errors.append(f"'payload.{key}' must be a string")
        if "custom_details" in payload and not isinstance(payload["custom_details"], dict):
            errors.append("'payload.custom_details' must be an object")
        stamp = payload.get("timestamp")
        if stamp is not None:
            try:
                datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            except ValueError:
                errors.append("'payload.timestamp' is not an ISO 8601 timestamp")
        for key in ("client", "client_url"):
            if key in event and not isinstance(event[key], str):
                errors.append(f"'{key}' must be a string")
        for link in event.get("links") or []:
            if not isinstance(link, dict) or not isinstance(link.get("href"), str):
                errors.append("each of 'links' needs an 'href'")
        for image in event.get("images") or []:
            if not isinstance(image, dict) or not str(image.get("src", "")).startswith("https://"):
                errors.append("each of 'images' needs an https 'src'")
        if errors:
            raise _Invalid(*errors)

    def _apply(self, event: dict[str, Any]) -> str:
        """De-duplication, as "Send an Alert Event" describes it; returns the key."""
        key = event.get("dedup_key") or str(uuid.uuid4())
        routing = event["routing_key"]
        alert = next(
            (a for a in self.alerts
             if (a.dedup_key, a.routing_key) == (key, routing) and a.status != "resolved"),
            None,
        )  # fmt: skip
        action = event["event_action"]
        if action == "trigger":
            if alert is None:
                alert = Alert(routing, key)
                self.alerts.append(alert)
            alert.events.append(event)
            return key
        if alert is None:
            self.dropped.append(event)
            return key
        alert.events.append(event)
        alert.status = "acknowledged" if action == "acknowledge" else "resolved"
        return key

    # --- what the tests read ---------------------------------------------------------------

    def alert(self, dedup_key: str) -> Alert | None:
        """The latest alert with ``dedup_key``."""
        with self.seen:
            found = [a for a in self.alerts if a.dedup_key == dedup_key]
            return found[-1] if found else None

    def wait_for(self, dedup_key: str, status: str, timeout: float = 15.0) -> Alert:
        """Wait (on a condition, with a deadline) until the alert is in ``status``."""

        def there() -> bool:
            found = [a for a in self.alerts if a.dedup_key == dedup_key]
            return bool(found) and found[-1].status == status

        with self.seen:
            ok = self.seen.wait_for(there, timeout)
        alert = self.alert(dedup_key)
        assert ok and alert is not None, f"alert {dedup_key} never {status}: {alert}"
        return alert
