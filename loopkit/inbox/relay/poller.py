"""Answers from Telegram: long-poll ``getUpdates`` while blocked and hand each update to the
:class:`~loopkit.inbox.relay.router.Router` (who may answer:
:mod:`~loopkit.inbox.relay.senders`; an update from anyone else is logged, and a tap is
answered "not allowed").

Exactly once: an update's answer is recorded (by the router, under the store lock) *before*
the offset moves past it; then the update is remembered as handled (for eight days), and the
offset is saved (in ``LOOPKIT_HOME`` or the fleet, as the hub keeps them) after each handled
batch. A crash in between means the update comes again after the restart: a handled one is
acknowledged and not applied again (a plain message would answer another block), and one
whose answer was recorded but not yet remembered finds its request answered — "already
answered", nothing changed.
An answer sent while loopkit was down waits at Telegram and is applied after the restart.

The offset is a confirmation, not a filter (SPEC §16): after a week without updates
Telegram restarts ``update_id`` at a random value, and an offset above the new ids would
confirm — swallow — every tap. So the offset is kept with the time its last update was
seen, on the poller's ``clock``, and one for which no update came in :data:`QUIET` (six
days) is dropped: the next ``getUpdates`` carries none, and what it brings back that was
handled already is acknowledged by the handled ids.

A tap is acknowledged (``answerCallbackQuery``) and the message is edited to show the outcome,
losing its keyboard. 409 (another process polls this bot), 429 and network failures back off
— exponentially, capped at 60 s — and are each reported once, never in a crash loop.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from loopkit.answering.service import Answering
from loopkit.answering.who import TelegramAllowed
from loopkit.channels.telegram_api import BotApi, BotApiError
from loopkit.clock import SystemClock
from loopkit.errors import LoopkitError
from loopkit.home.bot import Position
from loopkit.inbox.relay.base import LeasedThread
from loopkit.inbox.relay.router import Router
from loopkit.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import httpx

    from loopkit.clock import Clock
    from loopkit.config import ChannelSettings
    from loopkit.fleet import Hubs
    from loopkit.requests.hub import Hub
    from loopkit.requests.locate import Stores
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.phone")

POLL_TIMEOUT = 25  # seconds Telegram holds a getUpdates open
MAX_BACKOFF = 60.0
# An offset no update came after for this long is dropped: after a week without updates
# Telegram restarts update_id at a random value, and an offset above the new ids would
# confirm — swallow — every one of them (SPEC §16).
QUIET = timedelta(days=6)
ALREADY = "already answered"


class UpdatePoller(LeasedThread):
    """One bot's update poller, for every registered workspace of the machine.

    Telegram allows one ``getUpdates`` consumer per bot, so the thread first takes the bot's
    lease — an ``flock`` in ``LOOPKIT_HOME`` — and only then polls (:class:`LeasedThread`);
    the other processes' threads wait in that ``flock``, which the kernel hands over the
    moment the holder exits or dies. The holder routes each update to whichever registered
    workspace holds its request (by the id on the button, or by the replied-to message),
    applies it there exactly once, and removes that block's BLOCKED.md, supervised or
    not."""

    def __init__(
        self,
        settings: ChannelSettings,
        router: Router,
        *,
        hub: Hub,
        wait: Callable[[float], bool] | None = None,
        poll_timeout: int = POLL_TIMEOUT,
        clock: Clock | None = None,
    ) -> None:
        self.router = router
        self.bot = router.bot
        # One poller per bot: this machine's flock, or the fleet's advisory lock (SPEC §13),
        # as the hub it was handed keeps them.
        self.offsets = hub.offsets(settings.telegram_token)
        super().__init__(hub.bot_lease(self.offsets.bot))
        self.poll_timeout = poll_timeout
        self.clock = clock or SystemClock()
        self._busy = threading.Event()  # set while a fetched batch is being handled
        self._wait = wait or self.stopped.wait
        self._reported: str | None = None  # the kind of failure already reported
        self._dropped: int | None = None  # the stale offset already reported

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
        client: httpx.Client | None = None,
        wait: Callable[[float], bool] | None = None,
        poll_timeout: int = POLL_TIMEOUT,
        clock: Clock | None = None,
    ) -> UpdatePoller:
        """The relay as ``run`` and ``serve`` assemble it: the bot's poller and its router,
        answering through ``answering`` (default: a service of its own over ``stores``,
        ``hubs`` and ``here``). ``hub`` keeps the bot's lease and offset (default: the fleet
        ``settings`` name)."""
        bot = BotApi(settings, client=client)
        answering = answering or Answering(stores=stores, hubs=hubs, here=here)
        allowed = TelegramAllowed.of(settings, people_chats(stores, here))
        router = Router(bot, allowed, answering=answering)
        return cls(
            settings,
            router,
            hub=hub or hubs.for_dsn(settings.fleet_dsn),
            wait=wait,
            poll_timeout=poll_timeout,
            clock=clock,
        )

    def handle(self, update: dict[str, Any]) -> None:
        self.router.handle(update)

    def show_outcome(self, record: Request, original: Any = None) -> None:
        self.router.show_outcome(record, original)

    # --- the thread -----------------------------------------------------------------------

    thread_name = "loopkit-tg"

    def stop(self, wait: float = 5.0) -> None:
        """Stop polling; a batch being handled is finished first (its acks, edits, offset)."""
        self.stopped.set()
        self.active.set()  # let a paused loop see the stop
        if self._busy.is_set() and self._thread is not None:
            self._thread.join(wait)

    def serve(self) -> None:
        log.info("telegram_lease", msg=f"telegram: polling bot {self.offsets.bot} for this machine")
        backoff = 1.0
        while not self.stopped.is_set():
            started = self.clock.monotonic()
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
            if not handled and self.clock.monotonic() - started < 1.0 and self._wait(1.0):
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
        offset = self._offset()
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
            return self._handle_batch(updates)
        finally:
            self._busy.clear()

    def _offset(self) -> int | None:
        """The offset to confirm with, or None: one for which no update came in the last
        :data:`QUIET` (or whose time is unknown, or ahead of the clock by as much) is
        dropped — Telegram may have restarted its ids below it (SPEC §16)."""
        position = self.offsets.load()
        if position is None:
            return None
        now = self.clock.now()
        if position.seen_at is not None and abs(now - position.seen_at) < QUIET:
            self._dropped = None
            return position.offset
        if self._dropped != position.offset:
            self._dropped = position.offset
            log.info(
                "telegram_offset_dropped",
                msg=f"telegram: no update for {QUIET.days} days: polling without the stored "
                f"offset ({position.offset}); Telegram restarts its update ids after a week",
            )
        return None

    def _handle_batch(self, updates: list[Any]) -> int:
        keyed = [
            (update, update_key(update))
            for update in updates
            if isinstance(update, dict) and isinstance(update.get("update_id"), int)
        ]
        seen = self.offsets.handled([key for _, key in keyed])
        last: int | None = None
        for update, key in keyed:
            if key in seen:
                self._again(update)
            else:
                self._apply(update, key)
            # The next offset follows this batch alone: after the ids restart lower, the
            # offset goes down with them.
            last = max(last or 0, update["update_id"] + 1)
        if last is not None:
            self.offsets.save(Position(last, self.clock.now()))
        return len(updates)

    def _apply(self, update: dict[str, Any], key: str) -> None:
        try:
            self.handle(update)
        except LoopkitError as exc:
            log.warning("telegram_update_failed", msg=f"telegram update not applied: {exc}")
        except Exception as exc:  # one hostile update must never hold up the batch
            log.error("telegram_update_bug", msg=f"telegram update skipped: {exc!r}")
        # Remembered once handled: a crash before this, and the request answered meanwhile
        # says "already answered" when the update comes again.
        try:
            self.offsets.mark(key, self.clock.now())
        except OSError as exc:
            log.warning("telegram_mark_failed", msg=f"telegram: handled update not kept: {exc}")

    def _again(self, update: dict[str, Any]) -> None:
        """An update handled before (a crash came before the offset moved past it): it is
        acknowledged, never applied twice — a plain message would answer another block."""
        log.info("telegram_update_again", msg=f"telegram: update {update['update_id']} was "
                 "handled already")  # fmt: skip
        query = update.get("callback_query")
        if isinstance(query, dict) and query.get("id") is not None:
            self.bot.try_call(
                "answerCallbackQuery", {"callback_query_id": query["id"], "text": ALREADY}
            )


def update_key(update: dict[str, Any]) -> str:
    """What names one update among those handled: its id, and what Telegram numbers inside
    it (the callback query's id; the message's chat and id). Ids restart after a quiet
    week, and handled ones are kept eight days: an id alone could name two updates."""
    query, message = update.get("callback_query"), update.get("message")
    if isinstance(query, dict):
        return f"{update['update_id']}:cb:{query.get('id')}"
    if isinstance(message, dict):
        chat = message.get("chat")
        chat_id = chat.get("id") if isinstance(chat, dict) else None
        return f"{update['update_id']}:m:{chat_id}:{message.get('message_id')}"
    return f"{update['update_id']}"


def people_chats(stores: Stores, here: RequestStore | None = None) -> Callable[[], frozenset[str]]:
    """The chats of the people on Telegram (``[[escalation.people]]``) of ``here``'s and
    every registered workspace, read when an update comes (SPEC §29: a person is asked in
    their own chat)."""

    def chats() -> frozenset[str]:
        found: set[str] = set()
        for store in stores.all(here):
            try:
                people = stores.place(store.workspace.root).config.escalation.people
            except LoopkitError:
                continue
            found |= {p.address for p in people if p.channel == "telegram" and p.address}
        return frozenset(found)

    return chats
