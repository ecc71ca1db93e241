"""Answers from Slack: the app's Socket Mode connection, used by ``loopkit run`` and
``loopkit serve`` wherever the Telegram relay runs (SPEC §21).

Built on ``slack_sdk``'s Socket Mode client (its builtin WebSocket, no other dependency):
``apps.connections.open`` with the app-level token gives a one-use ``wss://`` URL; Slack
says ``hello``, then sends envelopes — ``interactive`` (a button click) and ``events_api``
(a message in a thread) — each with an ``envelope_id`` that must be acknowledged within
3 seconds, or Slack sends it again (``retry_attempt``, ``retry_reason``)
(https://api.slack.com/apis/connections/socket-implement). So:

- **Ack first, then work.** The listener acknowledges the envelope and only queues it; one
  worker thread routes the queue (:class:`~loopkit.inbox.relay.slack_router.SlackRouter`).
- **Applied once.** A payload is named by what Slack keeps across redeliveries (an event's
  ``event_id``; a click's ``trigger_id`` / ``action_ts``), remembered once handled — for
  eight days, in ``LOOPKIT_HOME`` or the fleet, as the hub keeps a bot's handled updates —
  and a redelivery of a handled one is acknowledged and dropped. The request's own claim
  (compare-and-set under its lock, through the hub) is the last guard: a second click says
  "already answered".
- **Reconnect.** ``disconnect`` (``refresh_requested``, ``warning``, ``link_disabled``) makes
  the client open a new URL at once; a dropped or failed connection is opened again with
  backoff (1 s doubled, capped at 60 s), each kind of failure reported once.
- **One connection per app per machine** (in the fleet, per fleet): the app's lease, the
  same ``flock`` / advisory lock a Telegram bot's poller takes, named ``slack-<app id>``.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
from collections import deque

from loopkit.answering.service import Answering
from loopkit.answering.who import SlackAllowed
from loopkit.channels.slack_web import SlackWeb, app_id
from loopkit.clock import SystemClock
from loopkit.errors import LoopkitError
from loopkit.inbox.relay.base import LeasedThread
from loopkit.inbox.relay.slack_router import SlackRouter
from loopkit.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.clock import Clock
    from loopkit.config import ChannelSettings
    from loopkit.fleet import Hubs
    from loopkit.requests.hub import Hub
    from loopkit.requests.locate import Stores
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.phone")

MAX_BACKOFF = 60.0
CHECK_EVERY = 5.0  # seconds between looks at a connection nobody said was closed
REMEMBERED = 1000  # payload keys kept in memory (the hub keeps them eight days)


def payload_key(kind: str, payload: dict[str, Any], envelope_id: str) -> str:
    """What names one payload across Slack's redeliveries (a redelivery may come in a new
    envelope): an event's ``event_id``; a click's ``trigger_id`` (else who, which message
    and ``action_ts``); else the envelope's id."""
    if kind == "events_api" and isinstance(payload.get("event_id"), str):
        return f"slack:ev:{payload['event_id']}"
    if kind == "interactive":
        if isinstance(payload.get("trigger_id"), str):
            return f"slack:ia:{payload['trigger_id']}"
        user = payload.get("user")
        actions = payload.get("actions")
        first = actions[0] if isinstance(actions, list) and actions else None
        user_id = user.get("id") if isinstance(user, dict) else None
        action_ts = first.get("action_ts") if isinstance(first, dict) else None
        return f"slack:ia:{user_id}:{action_ts}"
    return f"slack:env:{envelope_id}"


class SlackRelay(LeasedThread):
    """One Slack app's Socket Mode connection, for every registered workspace of the
    machine. :meth:`start` makes the thread; it connects once ``active`` is set (the
    first time this process waits on a block) and it holds the app's lease
    (:class:`LeasedThread`)."""

    thread_name = "loopkit-slack"

    def __init__(
        self,
        settings: ChannelSettings,
        router: SlackRouter,
        *,
        hub: Hub,
        clock: Clock | None = None,
        backoff: float = 1.0,
    ) -> None:
        self.settings = settings
        self.first_backoff = backoff  # the first wait after a refused connection, doubled
        self.router = router
        self.app = f"slack-{app_id(settings.slack_app_token)}"
        super().__init__(hub.bot_lease(self.app))
        self.handled_keys = hub.offsets(self.app)
        self.clock = clock or SystemClock()
        self.connected = threading.Event()  # set while a connection is open
        self.connections = 0  # connections opened so far
        self.applied = 0  # payloads routed (tests and the benchmark read it)
        self._wake = threading.Event()  # a connection closed, or stop
        self._queue: queue.Queue[tuple[str, dict[str, Any], str] | None] = queue.Queue()
        self._recent: deque[str] = deque(maxlen=REMEMBERED)
        self._worker: threading.Thread | None = None
        self._reported: str | None = None
        self._client: Any = None

    @classmethod
    def relay(
        cls,
        settings: ChannelSettings,
        *,
        hubs: Hubs,
        stores: Stores,
        hub: Hub | None = None,
        here: RequestStore | None = None,
        answering: Answering | None = None,
        clock: Clock | None = None,
    ) -> SlackRelay:
        """The relay as ``run`` and ``serve`` assemble it: the app's connection and its
        router, answering through ``answering`` (default: a service of its own over
        ``stores``, ``hubs`` and ``here``). ``hub`` keeps the app's lease and handled
        payloads (default: the fleet)."""
        answering = answering or Answering(stores=stores, hubs=hubs, here=here)
        router = SlackRouter(SlackWeb(settings), SlackAllowed.of(settings), answering=answering)
        return cls(settings, router, hub=hub or hubs.for_dsn(settings.fleet_dsn), clock=clock)

    def show_outcome(self, record: Request) -> None:
        self.router.show_outcome(record)

    # --- the threads ----------------------------------------------------------------------

    def stop(self, wait: float = 5.0) -> None:
        """Close the connection; what was acknowledged is routed first (then the lease goes)."""
        self.stopped.set()
        self.active.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(wait)

    def serve(self) -> None:
        from slack_sdk.socket_mode.builtin import SocketModeClient
        from slack_sdk.web import WebClient

        quiet = logging.getLogger("loopkit.slack_sdk")  # failures are reported below, once
        quiet.setLevel(logging.CRITICAL)
        quiet.propagate = False
        client = SocketModeClient(
            app_token=self.settings.slack_app_token or "",
            logger=quiet,
            web_client=WebClient(base_url=self.settings.slack_api, retry_handlers=[]),
            auto_reconnect_enabled=False,  # reconnecting is ours, with backoff
            on_close_listeners=[lambda *_: self._closed()],
        )
        client.socket_mode_request_listeners.append(self._on_request)
        self._client = client
        self._worker = threading.Thread(target=self._work, daemon=True, name="loopkit-slack-work")
        self._worker.start()
        log.info("slack_lease", msg=f"slack: Socket Mode for app {self.app} on this machine")
        failures = 0  # refused connections in a row
        try:
            while not self.stopped.is_set():
                if client.is_connected():
                    self.connected.set()
                    if self._wake.wait(CHECK_EVERY):
                        self._wake.clear()
                        self._settle(client)
                    continue
                self.connected.clear()
                try:
                    client.connect_to_new_endpoint()
                except Exception as exc:
                    backoff = min(self.first_backoff * 2 ** min(failures, 16), MAX_BACKOFF)
                    failures += 1
                    self._failed(exc, backoff)
                    if self.stopped.wait(backoff):
                        break
                    continue
                if client.is_connected():
                    self.connections += 1
                    failures = 0
                    if self._reported:
                        log.info("slack_connected", msg="slack: Socket Mode works again")
                        self._reported = None
        finally:
            self.connected.clear()
            self._queue.put(None)
            self._worker.join(5.0)
            _unblock(client)
            client.close()

    def _settle(self, client: Any) -> None:
        """A close was heard: the client lets its socket go just after telling (or, after a
        ``disconnect``, has opened a new one already); wait up to a second to see which."""
        for _ in range(20):
            if not client.is_connected() or self.stopped.wait(0.05):
                return

    def _closed(self) -> None:
        self._wake.set()  # the loop looks: an old connection after a refresh, or ours

    def _failed(self, exc: Exception, backoff: float) -> None:
        from slack_sdk.errors import SlackApiError

        if isinstance(exc, SlackApiError):
            error = str(exc.response.get("error") or exc.response.status_code)
            kind = f"api:{error}"
            hint = {
                "invalid_auth": "LOOPKIT_HITL_SLACK_APP_TOKEN is not valid: copy the app-level "
                "token (xapp-…) again",
                "not_allowed_token_type": "LOOPKIT_HITL_SLACK_APP_TOKEN must be an app-level "
                "token (xapp-…) with connections:write",
                "missing_scope": "the app-level token lacks connections:write: generate one "
                "with it (Basic Information → App-Level Tokens)",
            }.get(error, "is Socket Mode turned on in the app's settings?")
            text = f"apps.connections.open: {error} — {hint}"
        else:
            kind = type(exc).__name__
            text = f"cannot connect ({kind}); check the network"
        if self._reported != kind:
            self._reported = kind
            redacted = self.router.web.redactor.text(text)
            log.warning("slack_connect_failed", msg=f"slack: {redacted}; retrying in {backoff:g} s")

    def _on_request(self, client: Any, request: Any) -> None:
        """Slack's thread: acknowledge at once, then hand the payload on."""
        from slack_sdk.socket_mode.response import SocketModeResponse

        try:
            client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        except Exception as exc:  # not acknowledged: Slack sends it again
            log.warning("slack_ack_failed", msg=f"slack: acknowledgement not sent ({exc!r})")
        payload = request.payload if isinstance(request.payload, dict) else {}
        self._queue.put((str(request.type), payload, str(request.envelope_id)))

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            kind, payload, envelope_id = item
            key = payload_key(kind, payload, envelope_id)
            if key in self._recent or self._known(key):
                log.info("slack_again", msg=f"slack: {kind} payload handled already; dropped")
                continue
            try:
                self.router.handle(kind, payload)
            except LoopkitError as exc:
                log.warning("slack_payload_failed", msg=f"slack: payload not applied: {exc}")
            except Exception as exc:  # one hostile payload must not end the answer path
                log.error("slack_payload_bug", msg=f"slack: payload skipped: {exc!r}")
            self._recent.append(key)
            self.applied += 1
            try:
                self.handled_keys.mark(key, self.clock.now())
            except OSError as exc:
                log.warning("slack_mark_failed", msg=f"slack: handled payload not kept: {exc}")

    def _known(self, key: str) -> bool:
        try:
            return key in self.handled_keys.handled([key])
        except OSError:
            return False


def _unblock(client: Any) -> None:
    """Wake the client's threads that its ``close`` waits for — the reader, blocked up to its
    3 s receive timeout in ``recv``, and the message processor, up to 1 s on its queue — so a
    stopping supervisor does not linger."""
    client.closed = True
    client.message_queue.put(None)
    sock = getattr(getattr(client, "current_session", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
