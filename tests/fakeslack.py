"""A fake Slack on 127.0.0.1: the Web API over HTTP and Socket Mode over WebSocket.

It follows Slack's own pages, read strictly:

- Web API (https://api.slack.com/web): every method answers HTTP 200 with ``{"ok": true …}``
  or ``{"ok": false, "error": …}``; the token rides in ``Authorization: Bearer``. Errors
  given as the method pages list them: ``invalid_auth`` / ``not_authed`` for a wrong or
  missing token, ``not_allowed_token_type`` for an app-level token where a bot token is
  needed (and the other way round), ``missing_scope`` with ``needed`` and ``provided``,
  ``not_in_channel``, ``channel_not_found``, ``message_not_found``, ``cant_update_message``,
  ``invalid_blocks`` (https://api.slack.com/methods/chat.postMessage,
  https://api.slack.com/methods/chat.update, https://api.slack.com/methods/chat.postEphemeral,
  https://api.slack.com/methods/auth.test, https://api.slack.com/methods/conversations.info).
  ``chat.update`` takes a channel *id* only; a name is ``channel_not_found``.
- Block Kit limits (https://api.slack.com/reference/block-kit/blocks,
  https://api.slack.com/reference/block-kit/block-elements#button): a section's text at most
  3000 characters, a button's text plain_text of at most 75, its ``value`` at most 2000, at
  most 25 elements in an actions block, ``action_id`` unique within the message.
- ``apps.connections.open`` (https://api.slack.com/methods/apps.connections.open) takes the
  app-level token (``xapp-``) with ``connections:write`` and returns a one-use URL —
  ``ws://127.0.0.1:…/link/?ticket=…&app_id=…``; a used or unknown ticket is refused at the
  handshake.
- Socket Mode (https://api.slack.com/apis/connections/socket-implement,
  https://api.slack.com/apis/socket-mode): on connect Slack sends ``hello`` (with
  ``num_connections`` and ``debug_info``); payloads come in envelopes — ``type``
  ``interactive`` or ``events_api``, an ``envelope_id``, ``payload``,
  ``accepts_response_payload``, ``retry_attempt``, ``retry_reason`` — each acknowledged by
  sending back ``{"envelope_id": …}``. One not acknowledged within 3 s (``ack_timeout``) is
  sent again, in a new envelope, with ``retry_attempt`` one higher and ``retry_reason``
  ``"timeout"``, at most 3 retries. ``disconnect`` (``reason`` ``refresh_requested``,
  ``warning``, ``link_disabled``) says the connection goes: the fake delivers nothing more
  on it and closes it after ``disconnect_grace``. A payload goes to one open connection.
- A click is a ``block_actions`` payload (https://api.slack.com/reference/interaction-payloads/block-actions-payload):
  ``user``, ``container`` (``message_ts``, ``channel_id``), ``channel``, ``message``,
  ``trigger_id``, ``actions`` (``action_id``, ``block_id``, ``value``, ``action_ts``). Only
  a button that is on the message can be clicked. A message posted in a channel (the bot's
  own included, with ``bot_id``) comes as an ``events_api`` ``message`` event
  (https://api.slack.com/events/message) with its ``event_id``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

from helpers import wait_until

BOT_TOKEN = "xoxb-1111-2222-FakeBotTokenNotReal"
APP_TOKEN = "xapp-1-A0FAKEAPP1-3333-fakeapptokennotreal"
APP_ID = "A0FAKEAPP1"
TEAM = "T0FAKE"
BOT_USER = "U0LOOPKIT"
BOT_ID = "B0LOOPKIT"
CHANNEL_ID = "C0LOOPS"
CHANNEL_NAME = "loops"
BOT_SCOPES = ("chat:write", "channels:history", "groups:history", "channels:read")


@dataclass
class Call:
    method: str
    token: str | None
    body: dict[str, Any]


@dataclass
class Envelope:
    kind: str
    payload: dict[str, Any]
    envelope_id: str
    retry_attempt: int = 0
    sent_at: float = 0.0
    acked: bool = False


@dataclass
class Link:
    conn: ServerConnection
    lock: threading.Lock = field(default_factory=threading.Lock)
    leaving: bool = False  # a disconnect was sent: nothing more is delivered on it


class FakeSlack:
    def __init__(self, *, ack_timeout: float = 3.0, disconnect_grace: float = 1.0) -> None:
        self.ack_timeout = ack_timeout
        self.disconnect_grace = disconnect_grace
        self.bot_token = BOT_TOKEN
        self.app_token = APP_TOKEN
        self.bot_scopes: tuple[str, ...] = BOT_SCOPES
        self.app_scopes: tuple[str, ...] = ("connections:write",)
        self.members = {CHANNEL_ID}  # channels the bot is in
        self.channels = {CHANNEL_ID: CHANNEL_NAME, "C0OTHER": "other"}
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.acks: list[str] = []
        self.envelopes: list[Envelope] = []
        self.lose_acks = 0  # the next N acknowledgements are lost on the way
        self.tickets: set[str] = set()
        self.connects = 0
        self._links: list[Link] = []
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._ts = itertools.count(1)
        self._stop = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._ws: Server = serve(self._socket, "127.0.0.1", 0)
        self.ws_port = self._ws.socket.getsockname()[1]

    # --- lifecycle --------------------------------------------------------------------------

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/api/"

    def start(self) -> FakeSlack:
        for target in (self._http.serve_forever, self._ws.serve_forever, self._retrier):
            threading.Thread(target=target, daemon=True).start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._http.shutdown()
        self._http.server_close()
        self._ws.shutdown()

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "LOOPKIT_HITL_CHANNEL": "slack",
            "LOOPKIT_HITL_SLACK_BOT_TOKEN": self.bot_token,
            "LOOPKIT_HITL_SLACK_APP_TOKEN": self.app_token,
            "LOOPKIT_HITL_SLACK_CHANNEL": CHANNEL_ID,
            "LOOPKIT_HITL_SLACK_API": self.api,
            **extra,
        }

    # --- what tests read ----------------------------------------------------------------------

    def called(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def open_links(self) -> int:
        with self._lock:
            return sum(1 for link in self._links if not link.leaving)

    # --- the Web API ----------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                kind = self.headers.get("Content-Type") or ""
                if "json" in kind:
                    body = json.loads(raw or "{}")
                else:
                    body = {k: v[0] for k, v in parse_qs(raw).items()}
                auth = self.headers.get("Authorization") or ""
                token = auth[7:] if auth.startswith("Bearer ") else body.get("token")
                method = self.path.rsplit("/", 1)[-1]
                with fake._lock:
                    fake.calls.append(Call(method, token, body))
                answer = fake._method(method, token, body)
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def _method(self, method: str, token: str | None, body: dict[str, Any]) -> dict[str, Any]:
        if method == "apps.connections.open":
            return self._open(token)
        if not token:
            return {"ok": False, "error": "not_authed"}
        if token.startswith("xapp-"):
            return {"ok": False, "error": "not_allowed_token_type"}
        if token != self.bot_token:
            return {"ok": False, "error": "invalid_auth"}
        handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post,
            "chat.update": self._update,
            "chat.postEphemeral": self._ephemeral,
            "conversations.info": self._info,
        }
        if method not in handlers:
            return {"ok": False, "error": "unknown_method"}
        return handlers[method](body)

    def _needs(self, scope: str) -> dict[str, Any] | None:
        if scope in self.bot_scopes:
            return None
        return {
            "ok": False,
            "error": "missing_scope",
            "needed": scope,
            "provided": ",".join(self.bot_scopes),
        }

    def _channel(self, given: Any, *, ids_only: bool = False) -> str | None:
        if isinstance(given, str) and given in self.channels:
            return given
        if ids_only or not isinstance(given, str):
            return None
        name = given.lstrip("#")
        return next((cid for cid, n in self.channels.items() if n == name), None)

    def _auth_test(self, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://fake.slack.com/",
            "team": "Fake",
            "user": "loopkit",
            "team_id": TEAM,
            "user_id": BOT_USER,
            "bot_id": BOT_ID,
        }

    def _info(self, body: dict[str, Any]) -> dict[str, Any]:
        refused = self._needs("channels:read")
        if refused:
            return refused
        channel = self._channel(body.get("channel"), ids_only=True)
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        return {
            "ok": True,
            "channel": {
                "id": channel,
                "name": self.channels[channel],
                "is_member": channel in self.members,
            },
        }

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        refused = self._needs("chat:write")
        if refused:
            return refused
        channel = self._channel(body.get("channel"))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        if channel not in self.members:
            return {"ok": False, "error": "not_in_channel"}
        if not body.get("text") and not body.get("blocks"):
            return {"ok": False, "error": "no_text"}
        bad = _bad_blocks(body.get("blocks"))
        if bad:
            return {"ok": False, "error": "invalid_blocks", "errors": [bad]}
        thread = body.get("thread_ts")
        if thread is not None and (channel, thread) not in self.messages:
            thread = None  # Slack posts it in the channel
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        message = {
            "type": "message",
            "user": BOT_USER,
            "bot_id": BOT_ID,
            "ts": ts,
            "text": body.get("text") or "",
            "blocks": body.get("blocks") or [],
        }
        if thread:
            message["thread_ts"] = thread
        with self._lock:
            self.messages[(channel, ts)] = message
        self._event({**message, "channel": channel})
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    def _update(self, body: dict[str, Any]) -> dict[str, Any]:
        refused = self._needs("chat:write")
        if refused:
            return refused
        channel = self._channel(body.get("channel"), ids_only=True)
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        with self._lock:
            message = self.messages.get((channel, str(body.get("ts"))))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.get("bot_id") != BOT_ID:
            return {"ok": False, "error": "cant_update_message"}
        bad = _bad_blocks(body.get("blocks"))
        if bad:
            return {"ok": False, "error": "invalid_blocks", "errors": [bad]}
        with self._lock:
            if "text" in body:
                message["text"] = body["text"]
            if "blocks" in body:
                message["blocks"] = body["blocks"]
        return {"ok": True, "channel": channel, "ts": message["ts"], "text": message["text"]}

    def _ephemeral(self, body: dict[str, Any]) -> dict[str, Any]:
        refused = self._needs("chat:write")
        if refused:
            return refused
        channel = self._channel(body.get("channel"))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        if channel not in self.members:
            return {"ok": False, "error": "not_in_channel"}
        if not body.get("user"):
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "message_ts": f"{int(time.time())}.{next(self._ts):06d}"}

    def _open(self, token: str | None) -> dict[str, Any]:
        if not token:
            return {"ok": False, "error": "not_authed"}
        if token.startswith("xoxb-"):
            return {"ok": False, "error": "not_allowed_token_type"}
        if token != self.app_token:
            return {"ok": False, "error": "invalid_auth"}
        if "connections:write" not in self.app_scopes:
            return {
                "ok": False,
                "error": "missing_scope",
                "needed": "connections:write",
                "provided": ",".join(self.app_scopes),
            }
        ticket = f"t{next(self._ids)}"
        with self._lock:
            self.tickets.add(ticket)
        url = f"ws://127.0.0.1:{self.ws_port}/link/?ticket={ticket}&app_id={APP_ID}"
        return {"ok": True, "url": url}

    # --- Socket Mode ----------------------------------------------------------------------

    def _socket(self, conn: ServerConnection) -> None:
        query = parse_qs(urlparse(conn.request.path if conn.request else "").query)
        ticket = (query.get("ticket") or [""])[0]
        with self._lock:
            if ticket not in self.tickets:
                conn.close(1008, "invalid ticket")
                return
            self.tickets.discard(ticket)  # one use
            link = Link(conn)
            self._links.append(link)
            self.connects += 1
            count = len(self._links)
        hello = {
            "type": "hello",
            "num_connections": count,
            "debug_info": {
                "host": "fake-slack",
                "build_number": 1,
                "approximate_connection_time": 18060,
            },
            "connection_info": {"app_id": APP_ID},
        }
        self._send(link, hello)
        try:
            for raw in conn:
                try:
                    data = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(data, dict) and isinstance(data.get("envelope_id"), str):
                    self._acked(data["envelope_id"])
        except ConnectionClosed:
            pass
        finally:
            with self._lock:
                if link in self._links:
                    self._links.remove(link)

    def _send(self, link: Link, data: dict[str, Any]) -> bool:
        try:
            with link.lock:
                link.conn.send(json.dumps(data))
            return True
        except (ConnectionClosed, OSError):
            return False

    def _acked(self, envelope_id: str) -> None:
        with self._lock:
            if self.lose_acks > 0:
                self.lose_acks -= 1
                return
            self.acks.append(envelope_id)
            for envelope in self.envelopes:
                if envelope.envelope_id == envelope_id:
                    envelope.acked = True

    def _deliver(self, kind: str, payload: dict[str, Any], attempt: int = 0) -> Envelope:
        envelope = Envelope(kind, payload, f"env-{next(self._ids)}", attempt, time.monotonic())
        with self._lock:
            self.envelopes.append(envelope)
            links = [link for link in self._links if not link.leaving]
        data = {
            "envelope_id": envelope.envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind == "interactive",
            "retry_attempt": attempt,
            "retry_reason": "timeout" if attempt else "",
        }
        for link in links[:1]:  # one connection gets it
            self._send(link, data)
        return envelope  # no connection: unacknowledged, sent again on retry

    def _retrier(self) -> None:
        while not self._stop.wait(0.05):
            now = time.monotonic()
            with self._lock:
                late = [
                    e
                    for e in self.envelopes
                    if not e.acked and e.sent_at and now - e.sent_at > self.ack_timeout
                ]
                for envelope in late:
                    envelope.sent_at = 0.0  # this one is done; its retry is a new envelope
            for envelope in late:
                if envelope.retry_attempt < 3:
                    self._deliver(envelope.kind, envelope.payload, envelope.retry_attempt + 1)

    def redeliver(self, envelope: Envelope) -> Envelope:
        """Slack sends a payload again (in a new envelope), acknowledged or not."""
        return self._deliver(envelope.kind, envelope.payload, envelope.retry_attempt + 1)

    def _live_links(self, timeout: float = 10.0) -> list[Link]:
        """The open links, once there is one: the client may see its handshake done before the
        server's handler has run, so a test acting on "the connection" waits for it here."""
        wait_until(self.open_links, timeout, "an open Socket Mode connection")
        with self._lock:
            return [link for link in self._links if not link.leaving]

    def drop(self) -> None:
        """The TCP connection is cut with a close frame, no ``disconnect`` first (a network
        drop that reaches the client, or a server going away)."""
        for link in self._live_links():
            with self._lock:
                link.leaving = True
            link.conn.close()

    def disconnect(self, reason: str = "refresh_requested") -> None:
        links = self._live_links()
        with self._lock:
            for link in links:
                link.leaving = True
        for link in links:
            self._send(
                link, {"type": "disconnect", "reason": reason, "debug_info": {"host": "fake-slack"}}
            )
            timer = threading.Timer(self.disconnect_grace, link.conn.close)
            timer.daemon = True
            timer.start()

    # --- the human ------------------------------------------------------------------------

    def click(
        self,
        user: str,
        ts: str,
        index: int,
        *,
        channel: str = CHANNEL_ID,
        name: str = "ana",
        value: str | None = None,
    ) -> Envelope:
        """A click on the button at ``index`` of the message ``ts`` (only one that is there;
        ``value`` forges what it carries)."""
        with self._lock:
            message = self.messages[(channel, ts)]
            buttons = [
                e
                for b in message.get("blocks") or []
                if b.get("type") == "actions"
                for e in b["elements"]
                if e.get("value")
            ]
        button = dict(buttons[index])
        if value is not None:
            button["value"] = value
        action_ts = f"{time.time():.6f}"
        payload = {
            "type": "block_actions",
            "api_app_id": APP_ID,
            "token": "verification",
            "user": {"id": user, "username": name, "name": name, "team_id": TEAM},
            "team": {"id": TEAM, "domain": "fake"},
            "container": {
                "type": "message",
                "message_ts": ts,
                "channel_id": channel,
                "is_ephemeral": False,
            },
            "channel": {"id": channel, "name": self.channels.get(channel, "?")},
            "message": dict(message),
            "trigger_id": f"trig-{next(self._ids)}",
            "response_url": "https://hooks.slack.invalid/actions/x",
            "actions": [
                {
                    "type": "button",
                    "action_id": button["action_id"],
                    "block_id": "loopkit-choices",
                    "text": button["text"],
                    "value": button["value"],
                    "action_ts": action_ts,
                }
            ],
        }
        return self._deliver("interactive", payload)

    def reply(self, user: str, thread_ts: str, text: str, *, channel: str = CHANNEL_ID) -> Envelope:
        """A message in the thread of ``thread_ts``."""
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        message = {"type": "message", "user": user, "text": text, "ts": ts, "thread_ts": thread_ts}
        with self._lock:
            self.messages[(channel, ts)] = message
        return self._event({**message, "channel": channel})

    def _event(self, event: dict[str, Any]) -> Envelope:
        payload = {
            "token": "verification",
            "team_id": TEAM,
            "api_app_id": APP_ID,
            "event": {**event, "channel_type": "channel", "event_ts": event["ts"]},
            "type": "event_callback",
            "event_id": f"Ev{next(self._ids):08d}",
            "event_time": int(time.time()),
        }
        return self._deliver("events_api", payload)


def _bad_blocks(blocks: Any) -> str | None:
    """Why Block Kit refuses these blocks, or None."""
    if blocks is None:
        return None
    if not isinstance(blocks, list) or len(blocks) > 50:
        return "blocks must be a list of at most 50"
    action_ids: set[str] = set()
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") not in ("section", "actions"):
            return "unsupported block"
        if block["type"] == "section":
            text = block.get("text")
            if not (isinstance(text, dict) and 0 < len(str(text.get("text") or "")) <= 3000):
                return "section text must be 1-3000 characters"
            continue
        elements = block.get("elements")
        if not isinstance(elements, list) or not 0 < len(elements) <= 25:
            return "an actions block holds 1-25 elements"
        for element in elements:
            text = element.get("text") or {}
            if text.get("type") != "plain_text" or not 0 < len(text.get("text") or "") <= 75:
                return "a button's text is plain_text of 1-75 characters"
            if "value" in element and len(str(element["value"])) > 2000:
                return "a button's value is at most 2000 characters"
            action_id = element.get("action_id")
            if action_id in action_ids:
                return "action_id must be unique"
            action_ids.add(action_id)
    return None
