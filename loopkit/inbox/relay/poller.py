"""Answers from Telegram: long-poll ``getUpdates`` while blocked and hand each update to the
:class:`~loopkit.inbox.relay.router.Router` (who may answer:
:mod:`~loopkit.inbox.relay.senders`; an update from anyone else is logged, and a tap is
answered "not allowed").

Exactly once: an update's answer is recorded (by the router, under the store lock) *before*
the offset moves past it, and the offset is saved (in ``LOOPKIT_HOME`` or the fleet, as the
hub keeps it) after each handled batch. A crash in between means the update comes again
after the restart; the request is answered by then, so it is acknowledged "already
answered" and changes nothing.
An answer sent while loopkit was down waits at Telegram and is applied after the restart.

A tap is acknowledged (``answerCallbackQuery``) and the message is edited to show the outcome,
losing its keyboard. 409 (another process polls this bot), 429 and network failures back off
— exponentially, capped at 60 s — and are each reported once, never in a crash loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from loopkit.channels.telegram_api import BotApi, BotApiError
from loopkit.config import ChannelSettings
from loopkit.errors import LoopkitError
from loopkit.fleet import Hubs
from loopkit.inbox.relay.router import Router
from loopkit.inbox.relay.senders import Allowed
from loopkit.log import get_logger
from loopkit.requests.hub import Hub
from loopkit.requests.locate import Stores
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore

log = get_logger("loopkit.phone")

POLL_TIMEOUT = 25  # seconds Telegram holds a getUpdates open
MAX_BACKOFF = 60.0


class UpdatePoller:
    """One bot's update poller, for every registered workspace of the machine.

    Telegram allows one ``getUpdates`` consumer per bot, so the thread first takes the bot's
    lease — an ``flock`` in ``LOOPKIT_HOME`` — and only then polls; the other processes'
    threads wait in that ``flock``, which the kernel hands over the moment the holder exits
    or dies. The holder routes each update to whichever registered workspace holds its
    request (by the id on the button, or by the replied-to message), applies it there
    exactly once, and removes that block's BLOCKED.md, supervised or not."""

    def __init__(
        self,
        settings: ChannelSettings,
        router: Router,
        *,
        hub: Hub,
        wait: Callable[[float], bool] | None = None,
        poll_timeout: int = POLL_TIMEOUT,
    ) -> None:
        self.router = router
        self.bot = router.bot
        # One poller per bot: this machine's flock, or the fleet's advisory lock (SPEC §13),
        # as the hub it was handed keeps them.
        self.offsets = hub.offsets(settings.telegram_token)
        self.lease = hub.bot_lease(self.offsets.bot)
        self.poll_timeout = poll_timeout
        self.active = threading.Event()
        self.stopped = threading.Event()
        self._busy = threading.Event()  # set while a fetched batch is being handled
        self._wait = wait or self.stopped.wait
        self._thread: threading.Thread | None = None
        self._reported: str | None = None  # the kind of failure already reported

    @classmethod
    def relay(
        cls,
        settings: ChannelSettings,
        *,
        hubs: Hubs,
        stores: Stores,
        hub: Hub | None = None,
        here: RequestStore | None = None,
        client: httpx.Client | None = None,
        wait: Callable[[float], bool] | None = None,
        poll_timeout: int = POLL_TIMEOUT,
    ) -> UpdatePoller:
        """The relay as ``run`` and ``serve`` assemble it: the bot's poller and its router.
        ``hub`` keeps the bot's lease and offset (default: the fleet ``settings`` name)."""
        bot = BotApi(settings, client=client)
        router = Router(bot, Allowed.of(settings), stores=stores, hubs=hubs, here=here)
        return cls(
            settings,
            router,
            hub=hub or hubs.for_dsn(settings.fleet_dsn),
            wait=wait,
            poll_timeout=poll_timeout,
        )

    def handle(self, update: dict[str, Any]) -> None:
        self.router.handle(update)

    def show_outcome(self, record: Request, original: Any = None) -> None:
        self.router.show_outcome(record, original)

    # --- the thread -----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True, name="loopkit-tg")
            self._thread.start()

    def stop(self, wait: float = 5.0) -> None:
        """Stop polling; a batch being handled is finished first (its acks, edits, offset)."""
        self.stopped.set()
        self.active.set()  # let a paused loop see the stop
        if self._busy.is_set() and self._thread is not None:
            self._thread.join(wait)

    def _run(self) -> None:
        if not self.active.is_set():
            self.active.wait()  # not before this process first waits on a block
        if self.stopped.is_set():
            return
        self.lease.take()
        try:
            if not self.stopped.is_set():
                self._poll()
        finally:
            self.lease.release()  # a stopped poller hands the lease on

    def _poll(self) -> None:
        log.info("telegram_lease", msg=f"telegram: polling bot {self.offsets.bot} for this machine")
        backoff = 1.0
        while not self.stopped.is_set():
            started = time.monotonic()
            try:
                handled = self.poll_once()
            except BotApiError as exc:
                wait = self._failed(exc, backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                if self._wait(wait):
                    return
                continue
            except Exception as exc:  # a bug here must not end the loop's only answer path
                log.error("telegram_poll_bug", msg=f"telegram polling failed: {exc!r}")
                if self._wait(backoff):
                    return
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            if self._reported:
                log.info("telegram_poll_ok", msg="telegram polling works again")
                self._reported = None
            backoff = 1.0
            if not handled and time.monotonic() - started < 1.0 and self._wait(1.0):
                return  # an empty answer that did not long-poll: never spin

    def _failed(self, exc: BotApiError, backoff: float) -> float:
        wait = max(backoff, exc.wait or 0.0) if exc.kind != "rate" else (exc.wait or backoff)
        wait = min(wait, MAX_BACKOFF) if exc.kind != "rate" else wait
        if self._reported != exc.kind:
            self._reported = exc.kind
            hint = {
                "conflict": "another process is polling this bot (a second loopkit, or a "
                "webhook); stop it, or `loopkit doctor` shows the webhook",
                "rate": "Telegram asked to slow down",
                "network": "cannot reach Telegram; still watching BLOCKED.md",
                "http": "Telegram refused getUpdates",
            }[exc.kind]
            log.warning(
                "telegram_poll_failed",
                kind=exc.kind,
                msg=f"telegram: {exc} — {hint}; retrying in {wait:g} s",
            )
        return wait

    # --- one batch ------------------------------------------------------------------------

    def poll_once(self, *, timeout: int | None = None) -> int:
        """One getUpdates; handle the batch; then move the offset. Returns the batch size."""
        offset = self.offsets.load()
        wait = self.poll_timeout if timeout is None else timeout
        payload: dict[str, Any] = {
            "timeout": wait,
            "allowed_updates": ["callback_query", "message"],
        }
        if offset is not None:
            payload["offset"] = offset
        updates = self.bot.call("getUpdates", payload, timeout=wait + 10)
        if not isinstance(updates, list) or not updates:
            return 0
        self._busy.set()  # before the check: stop() either sees it (and waits) or we see stop
        try:
            if self.stopped.is_set():
                return 0  # not handled, offset not moved: the next poller gets them again
            return self._handle_batch(updates, offset)
        finally:
            self._busy.clear()

    def _handle_batch(self, updates: list[Any], offset: int | None) -> int:
        last = offset
        for update in updates:
            if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
                continue
            try:
                self.handle(update)
            except LoopkitError as exc:
                log.warning("telegram_update_failed", msg=f"telegram update not applied: {exc}")
            except Exception as exc:  # one hostile update must never hold up the batch
                log.error("telegram_update_bug", msg=f"telegram update skipped: {exc!r}")
            last = max(last or 0, update["update_id"] + 1)
        if last is not None:
            self.offsets.save(last)
        return len(updates)
