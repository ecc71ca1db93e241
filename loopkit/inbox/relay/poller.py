"""Answers from Telegram: long-poll ``getUpdates`` while blocked and record taps and replies.

Who may answer: only updates from ``LOOPKIT_HITL_TELEGRAM_CHAT`` and, when set, from a user
in ``LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS`` (numeric ids: usernames change). Anything else
decides nothing; it is logged, and a tap is answered "not allowed".

Exactly once: an update's answer is recorded (``loopkit.answers.answer``, under the store
lock) *before* the offset moves past it, and the offset is saved under ``.loopkit/`` after
each handled batch. A crash in between means the update comes again after the restart; the
request is answered by then, so it is acknowledged "already answered" and changes nothing.
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
from loopkit.config import Config
from loopkit.errors import LoopkitError, RequestConflict
from loopkit.escalation.blockfile import remove_block
from loopkit.escalation.sender import message_for
from loopkit.fleet.route import answer_anywhere
from loopkit.home import Registry
from loopkit.inbox.relay.senders import (
    Sender,
    outcome_line,
    sender_of,
    telegram_message_id,
)
from loopkit.log import get_logger
from loopkit.message import LETTERS, fold
from loopkit.requests import hub
from loopkit.requests.locate import store_for, store_holding
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

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
        config: Config,
        *,
        client: httpx.Client | None = None,
        wait: Callable[[float], bool] | None = None,
        poll_timeout: int = POLL_TIMEOUT,
        store: RequestStore | None = None,
    ) -> None:
        self.config = config
        self.bot = BotApi(config.channels, client=client)
        self.store = store or RequestStore(Workspace.of(config))
        # One poller per bot: this machine's flock, or the fleet's advisory lock (SPEC §13).
        self.offsets = hub.current().offsets(config.channels.telegram_token)
        self.lease = hub.current().bot_lease(self.offsets.bot)
        self.poll_timeout = poll_timeout
        self.active = threading.Event()
        self.stopped = threading.Event()
        self._busy = threading.Event()  # set while a fetched batch is being handled
        self._wait = wait or self.stopped.wait
        self._thread: threading.Thread | None = None
        self._reported: str | None = None  # the kind of failure already reported
        chat = (config.channels.telegram_chat or "").strip()
        self.chat = chat
        self.allowed = frozenset(config.channels.telegram_allowed_users)

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

    def _chat_ok(self, chat: Any) -> bool:
        if not isinstance(chat, dict) or not self.chat:
            return False
        if str(chat.get("id")) == self.chat:
            return True
        username = chat.get("username")
        return bool(username) and self.chat.lstrip("@").lower() == str(username).lower()

    def _user_ok(self, sender: Sender) -> bool:
        return not self.allowed or (sender.user_id is not None and sender.user_id in self.allowed)

    def handle(self, update: dict[str, Any]) -> None:
        if isinstance(update.get("callback_query"), dict):
            self._tap(update["callback_query"])
        elif isinstance(update.get("message"), dict):
            self._text(update["message"])

    def _tap(self, query: dict[str, Any]) -> None:
        sender = sender_of(query.get("from"))
        raw = query.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        query_id = query.get("id")
        if not (self._chat_ok(message.get("chat")) and self._user_ok(sender)):
            log.warning(
                "telegram_not_allowed",
                user=sender.user_id,
                msg=f"telegram: ignored a tap from {sender.by}: not allowed",
            )
            self._ack(query_id, "not allowed")
            return
        request_id, _, index_text = str(query.get("data") or "").rpartition(":")
        # Exactly <request_id>:<index>, an ASCII index ("²" is a digit to isdigit()).
        if not (request_id and index_text.isascii() and index_text.isdigit()):
            self._ack(query_id, "unknown button")
            return
        target = self._find(request_id)
        if target is None:
            self._ack(query_id, "unknown request")
            return
        index = int(index_text[:3])
        sent_as = telegram_message_id(target)
        if index >= min(len(target.options), len(LETTERS)) or (
            sent_as is not None and sent_as != message.get("message_id")
        ):
            # A forged button: an index the request does not offer, or another request's
            # id riding on this block's message.
            self._ack(query_id, "unknown button")
            return
        applied = self._apply(request_id, LETTERS[index], sender)
        if applied is None:
            self._ack(query_id, "unknown request")
            return
        record, already = applied
        if already:
            self._ack(query_id, already)
            return
        self._ack(query_id, outcome_line(record))
        self.show_outcome(record, message.get("text"))

    def _find(self, request_id: str) -> Request | None:
        """The request wherever it is: this machine's workspaces, else the fleet's."""
        try:
            return store_holding(request_id, self.store).load(request_id)
        except LoopkitError:
            remote = hub.current().find(request_id)
            return remote.record if remote else None

    def _text(self, message: dict[str, Any]) -> None:
        sender = sender_of(message.get("from"))
        replied = message.get("reply_to_message")
        text = message.get("text")
        if not isinstance(text, str) or text.startswith("/"):
            return  # a sticker, a photo, a bot command: nothing to answer with
        if not isinstance(replied, dict):
            if self._chat_ok(message.get("chat")) and self._user_ok(sender):
                self._plain(text, sender)
            return
        if not (self._chat_ok(message.get("chat")) and self._user_ok(sender)):
            log.warning(
                "telegram_not_allowed",
                user=sender.user_id,
                msg=f"telegram: ignored a reply from {sender.by}: not allowed",
            )
            return
        record = self._request_for_message(replied.get("message_id"))
        if record is None:
            log.info(
                "telegram_reply_ignored",
                msg="telegram: ignored a reply to a message that is no block's",
            )
            return
        applied = self._apply(record.request_id, text, sender)
        if applied is not None and not applied[1]:
            self.show_outcome(applied[0], replied.get("text"))

    def _open_blocks(self) -> list[tuple[Request, RequestStore]]:
        """Every open block sent to this chat, across the machine's workspaces."""
        found = []
        for store in self._stores():
            for _, record in store.all():
                if not (isinstance(record, Request) and record.is_open and record.has_own_block):
                    continue
                if telegram_message_id(record) is not None:
                    found.append((record, store))
        return found

    def _plain(self, text: str, sender: Sender) -> None:
        """A message that replies to nothing: it answers the open block when exactly one is
        open across the machine; with several, the bot lists them and says how to answer."""
        blocks = self._open_blocks()
        if len(blocks) == 1:
            record, _ = blocks[0]
            applied = self._apply(record.request_id, text, sender)
            if applied is not None and not applied[1]:
                self.show_outcome(applied[0])
            return
        if not blocks:
            log.info("telegram_chatter", msg="telegram: a message, and no block is open")
            return
        lines = [
            f"{len(blocks)} questions are open; reply to the question's message or tap a button:"
        ]
        lines += [f"- {store.workspace.repo_name()}: {fold(r.prompt, 100)}" for r, store in blocks]
        self.bot.try_call("sendMessage", {"chat_id": self.chat, "text": "\n".join(lines)})

    def _stores(self) -> list[RequestStore]:
        """This workspace's store first, then every other registered workspace's."""
        stores = [self.store]
        for registered in Registry().workspaces():
            if registered.path != self.store.workspace.root:
                stores.append(store_for(registered.path))
        return stores

    def _request_for_message(self, message_id: Any) -> Request | None:
        if not isinstance(message_id, int):
            return None
        for store in self._stores():
            for _, record in store.all():
                if isinstance(record, Request) and telegram_message_id(record) == message_id:
                    return record
        return None

    def _apply(
        self, request_id: str, reply: str, sender: Sender
    ) -> tuple[Request, str | None] | None:
        """Record the answer. Returns the record and, if it was answered already, why not."""
        about = {"by_id": sender.user_id, "by_name": sender.name}
        try:
            result, store = answer_anywhere(request_id, reply, by=sender.by, via="telegram",
                                            here=self.store, about=about)  # fmt: skip
        except RequestConflict as conflict:
            found = self._find(request_id)
            return (found, fold(str(conflict), 190)) if found else None
        except LoopkitError:
            return None
        if store is not None and not result.deferred:
            # As `loopkit unblock --reply` does: the block goes, supervised or not; a waiting
            # supervisor sees the answer either way and hands it on once.
            remove_block(store.workspace.blocked, result.record)
        log.info(
            "telegram_answer",
            request_id=request_id,
            by=sender.by,
            msg=f"telegram: {sender.name} answered {request_id}",
        )
        return result.record, None

    def _ack(self, query_id: Any, text: str) -> None:
        if query_id is not None:
            self.bot.try_call(
                "answerCallbackQuery", {"callback_query_id": query_id, "text": fold(text, 190)}
            )

    def show_outcome(self, record: Request, original: Any = None) -> None:
        """Edit the block's message to end with the outcome; its keyboard goes."""
        message_id = telegram_message_id(record)
        if message_id is None or not self.chat:
            return
        if not isinstance(original, str):
            try:
                repo = store_holding(record.request_id, self.store).workspace.repo_name()
            except LoopkitError:
                repo = Workspace.of(self.config).repo_name()
            original = message_for(record, repo).text
        self.bot.try_call(
            "editMessageText",
            {
                "chat_id": self.chat,
                "message_id": message_id,
                "text": f"{original}\n\n{outcome_line(record)}",
                "reply_markup": {"inline_keyboard": []},
            },
        )
