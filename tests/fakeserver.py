"""A real HTTP server on 127.0.0.1, in a thread, for the Telegram and Slack shapes.

Tests queue replies per path suffix (``sendMessage``, ``/hook``); every request is recorded
with its path and JSON body. A reply may hang: the handler then waits until the server is
closed, so the client's own timeout is what ends the call.

An inline keyboard whose ``callback_data`` is not 1-64 bytes is refused (400), as the Bot API
does (https://core.telegram.org/bots/api#inlinekeyboardbutton). ``getUpdates`` behaves like
the Bot API's long poll, with its real semantics — the reference's words
(https://core.telegram.org/bots/api#getupdates and
https://core.telegram.org/bots/api#update), read strictly:

- "An update is considered confirmed as soon as getUpdates is called with an offset higher
  than its update_id": an ``offset`` forgets every update below it *for every consumer*,
  whenever it arrived — an update pushed with an id below the offset of a poll that holds
  is swallowed by that poll. Without an offset the earliest unconfirmed updates come; a
  negative offset keeps only the last ``-offset``. At most ``limit`` (1–100, default 100)
  come at once, in the order they arrived.
- Updates nobody fetched are kept at most 24 hours (the reference's "Getting updates").
- Update ids count up one by one from some positive number, but the first update after a
  week without any gets a random id (the reference's ``Update.update_id``). Time is
  :attr:`FakeServer.now` (a test hands in its fake clock's, so a quiet week is simulated,
  never waited); the random id is below the last one with
  :attr:`FakeServer.lower_after_quiet` — the case that loses taps behind a stored offset —
  and :meth:`FakeServer.restart_ids` forces that restart at once (for a loopkit in another
  process, whose clock is the real one). The open-source Bot API server
  (tdlib/telegram-bot-api, ``Client::do_get_updates``) reads from its queue's head when its
  queue refuses the offset; the reference promises nothing of the kind, so the fake does
  not either.
- A second ``getUpdates`` while one is held makes the first return 409 Conflict
  ("terminated by other getUpdates request"), as Telegram does: one consumer per bot.
- A callback query is answered once: a second ``answerCallbackQuery`` for the same id is
  400 ("query is too old … or query ID is invalid", the reference's answerCallbackQuery). An
  ``editMessageText`` that leaves a message's text and keyboard as they are is 400 ("message
  is not modified"), as Telegram answers.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from loopback import Loopback, QuietHandler

KEPT = timedelta(hours=24)  # how long Telegram keeps an update nobody fetched
QUIET = timedelta(days=7)  # after this long without updates, ids restart at random
MAX_ID = 2**31 - 1


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


class FakeServer(Loopback):
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self._replies: dict[str, deque[Reply]] = defaultdict(deque)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._message_id = 100
        self._answered_queries: set[Any] = set()  # callback queries answered: once each
        self._shown: dict[tuple[Any, Any], tuple[Any, str]] = {}  # message → text, keyboard
        self.updates: list[dict[str, Any]] = []  # not yet confirmed, in the order they came
        self._arrived: dict[int, datetime] = {}  # update_id → when it was pushed
        self._next_update = 1000
        self._last_push: datetime | None = None
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.lower_after_quiet = False  # the random id after a quiet week: below the last
        self._restart = False
        self._random = random.Random(0)  # seeded: a failure replays as it was
        self._poll_generation = 0  # a new getUpdates ends (409) the one held before it
        self.conflicts = 0  # how many getUpdates it ended with 409
        self.held = 0  # getUpdates being held right now
        self.seen = threading.Condition(self._lock)
        server = self

        class Handler(QuietHandler):
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
                kind = "text/plain" if isinstance(payload, str) else "application/json"
                self.answer(status, data, kind, reply.headers)

        self.serve(Handler)

    def close(self) -> None:
        with self.seen:
            self._closing.set()
            self.seen.notify_all()
        super().close()

    def push_update(self, **update: Any) -> int:
        """Make an update available to getUpdates; returns its update_id."""
        with self.seen:
            now = self.now()
            quiet = self._last_push is not None and now - self._last_push >= QUIET
            if quiet or self._restart:
                top = self._next_update if self.lower_after_quiet or self._restart else MAX_ID
                # well below the ids of before (the last few may still be held or recalled)
                self._next_update = self._random.randint(1, max(1, top // 2)) - 1
                self._restart = False
            self._next_update += 1
            update_id = self._next_update
            self._last_push = now
            self._arrived[update_id] = now
            self.updates.append({"update_id": update_id, **update})
            self.seen.notify_all()
        return update_id

    def restart_ids(self) -> None:
        """The next update's id is chosen at random below the last one, as Telegram does
        after a week without updates — now, whatever the clock says."""
        with self.seen:
            self._restart = True

    def _long_poll(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        offset = int(body.get("offset") or 0)
        limit = int(body.get("limit") or 100)
        hold = float(body.get("timeout") or 0)
        if not 1 <= limit <= 100:
            return 400, {"ok": False, "error_code": 400, "description": "Bad Request: limit"}

        def confirm(below: int) -> None:
            self.updates = [u for u in self.updates if u["update_id"] >= below]

        def ready() -> list[dict[str, Any]]:
            cutoff = self.now() - KEPT
            self.updates = [u for u in self.updates if self._arrived[u["update_id"]] > cutoff]
            if offset > 0:
                confirm(offset)  # and any that came below it while this poll held
            return self.updates[:limit]

        with self.seen:
            if offset < 0:  # only the last -offset are kept
                self.updates = self.updates[len(self.updates) + offset :]
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
            refused = _bad_buttons(seen.body) or self._refused(seen)
            if refused is not None:
                return refused
            for suffix, replies in self._replies.items():
                if seen.path.endswith(suffix) and replies:
                    return replies.popleft()
            return Reply()

    def _refused(self, seen: Seen) -> Reply | None:
        """What the Bot API refuses of a call loopkit may repeat (called under the lock)."""
        body = seen.body if isinstance(seen.body, dict) else {}
        if seen.path.endswith("/answerCallbackQuery"):
            query = body.get("callback_query_id")
            if query in self._answered_queries:
                return _bad_request("query is too old and response timeout expired or query ID "
                                    "is invalid")  # fmt: skip
            self._answered_queries.add(query)
        if seen.path.endswith("/editMessageText"):
            key = (body.get("chat_id"), body.get("message_id"))
            shown = (body.get("text"), json.dumps(body.get("reply_markup"), sort_keys=True))
            if self._shown.get(key) == shown:
                return _bad_request("message is not modified: specified new message content "
                                    "and reply markup are exactly the same as a current content "
                                    "and reply markup of the message")  # fmt: skip
            self._shown[key] = shown
        return None

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


def _bad_request(description: str) -> Reply:
    return Reply(
        400, {"ok": False, "error_code": 400, "description": f"Bad Request: {description}"}
    )


def _bad_buttons(body: Any) -> Reply | None:
    """The Bot API refuses an inline keyboard whose ``callback_data`` is not 1-64 bytes
    (https://core.telegram.org/bots/api#inlinekeyboardbutton), whatever the method."""
    markup = body.get("reply_markup") if isinstance(body, dict) else None
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    for row in rows if isinstance(rows, list) else []:
        for button in row if isinstance(row, list) else []:
            data = button.get("callback_data") if isinstance(button, dict) else None
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                description = "Bad Request: BUTTON_DATA_INVALID"
                return Reply(400, {"ok": False, "error_code": 400, "description": description})
    return None
