"""The relay's router: one Telegram update → the request it answers, wherever it is.

A tap names its request on the button (``<request_id>:<index>``); a reply names it by the
message it replies to; a plain message answers the one open block, when exactly one is open
across the machine. Bot commands (``/loops``, ``/pause <repo>`` …), ``@repo`` notes and
replies to a message about one loop steer loops (:mod:`~loopkit.inbox.relay.commands`).
The answer is recorded through
:func:`~loopkit.fleet.route.answer_anywhere` — this machine's workspaces first (each store
with its own hub), then the fleets — exactly once, and the block's ``BLOCKED.md`` goes. Who
may answer is :class:`~loopkit.inbox.relay.senders.Allowed`'s to say.
"""

from __future__ import annotations

from loopkit.channels.telegram import (
    CALLBACK_DATA_MAX,
    CONFIRM,
    callback_data,
    confirm_data,
    keyboard,
)
from loopkit.errors import LoopkitError, RequestConflict
from loopkit.escalation.blockfile import remove_block
from loopkit.escalation.sender import message_for
from loopkit.fleet.route import answer_anywhere
from loopkit.inbox.relay.commands import LoopCommands
from loopkit.inbox.relay.senders import (
    outcome_line,
    sender_of,
    telegram_message_id,
)
from loopkit.log import get_logger
from loopkit.message import LETTERS, fold
from loopkit.requests.irreversible import (
    approves,
    confirm_question,
    is_irreversible,
    needs_second_tap,
)
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.channels.telegram_api import BotApi
    from loopkit.fleet import Hubs
    from loopkit.inbox.relay.senders import (
        Allowed,
        Sender,
    )
    from loopkit.message import Message
    from loopkit.requests.locate import Stores
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.phone")


def parse_button(data: Any) -> tuple[str, int, bool] | None:
    """``(request_id, index, confirmed)`` from a button's data as loopkit writes it —
    ``<request_id>:<index>``, or ``<request_id>:<index>:confirm`` for the second tap of an
    irreversible approval — else None. The one reading of a button, Telegram's and Slack's."""
    data = str(data or "")
    head, _, tail = data.rpartition(":")
    confirmed = tail == CONFIRM
    request_id, _, index_text = (head if confirmed else data).rpartition(":")
    # Exactly <request_id>:<index> as loopkit writes it: ASCII digits ("²" is a digit to
    # isdigit()), no leading zero ("01" is no button of ours), at most two of them.
    if not (
        request_id
        and index_text.isascii()
        and index_text.isdigit()
        and len(index_text) <= 2
        and index_text == str(int(index_text))
    ):
        return None
    return request_id, int(index_text), confirmed


class Router:
    """Routes a bot's updates to the requests they answer.

    ``here`` is the assembling workspace's own store (looked at first; None for ``serve``),
    ``stores`` every registered workspace's, ``hubs`` the fleets for other machines'."""

    def __init__(
        self,
        bot: BotApi,
        allowed: Allowed,
        *,
        stores: Stores,
        hubs: Hubs,
        here: RequestStore | None = None,
    ) -> None:
        self.bot = bot
        self.allowed = allowed
        self.stores = stores
        self.hubs = hubs
        self.here = here
        # /loops, /pause …, @repo notes: any machine's loop, with a fleet
        self.loop_commands = LoopCommands(bot, allowed.chat, fleet=hubs)

    @property
    def chat(self) -> str:
        return self.allowed.chat

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
        if not (self.allowed.chat_ok(message.get("chat")) and self.allowed.user_ok(sender)):
            log.warning(
                "telegram_not_allowed",
                user=sender.user_id,
                msg=f"telegram: ignored a tap from {sender.by}: not allowed",
            )
            self._ack(query_id, "not allowed")
            return
        button = parse_button(query.get("data"))
        if button is None:
            self._ack(query_id, "unknown button")
            return
        request_id, index, confirmed = button
        target = self._find(request_id)
        if target is None:
            self._ack(query_id, "unknown request")
            return
        sent_as = telegram_message_id(target)
        if index >= min(len(target.options), len(LETTERS)) or (
            sent_as is not None and sent_as != message.get("message_id")
        ):
            # A forged button: an index the request does not offer, or another request's
            # id riding on this block's message.
            self._ack(query_id, "unknown button")
            return
        reply = LETTERS[index]
        if confirmed and not (
            sent_as is not None and is_irreversible(target) and approves(target, reply)
        ):
            # A confirmation loopkit never offers: of a choice that does not approve, of a
            # request that needs no second tap, or away from the request's own message.
            self._ack(query_id, "unknown button")
            return
        if not confirmed and needs_second_tap(target, reply):
            self._ask_again(target, query_id=query_id)
            return
        applied = self._apply(request_id, reply, sender)
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
            store = self.stores.holding(request_id, self.here)
            if store is not None:
                return store.load(request_id)
        except LoopkitError:
            pass
        found = self.hubs.find(request_id)
        return found[1].record if found else None

    def _text(self, message: dict[str, Any]) -> None:
        sender = sender_of(message.get("from"))
        replied = message.get("reply_to_message")
        text = message.get("text")
        if not isinstance(text, str):
            return  # a sticker, a photo: nothing to answer with
        allowed = self.allowed.chat_ok(message.get("chat")) and self.allowed.user_ok(sender)
        if text.startswith("/"):  # a bot command: steering a loop (SPEC §22)
            if allowed:
                self.loop_commands.command(text, sender, message.get("message_id"))
            else:
                why = f"telegram: ignored a command from {sender.by}: not allowed"
                log.warning("telegram_not_allowed", user=sender.user_id, msg=why)
            return
        if not isinstance(replied, dict):
            if allowed and not self.loop_commands.addressed(
                text, sender, message.get("message_id")
            ):
                self._plain(text, sender, message.get("message_id"))
            return
        if not (self.allowed.chat_ok(message.get("chat")) and self.allowed.user_ok(sender)):
            log.warning(
                "telegram_not_allowed",
                user=sender.user_id,
                msg=f"telegram: ignored a reply from {sender.by}: not allowed",
            )
            return
        record = self._request_for_message(replied.get("message_id"))
        if record is None and self.loop_commands.replied(
            replied.get("message_id"), text, sender, message.get("message_id")
        ):
            return  # a note for the loop that message was about
        if record is None:
            log.info(
                "telegram_reply_ignored",
                msg="telegram: ignored a reply to a message that is no block's",
            )
            return
        if needs_second_tap(record, text):
            self._ask_again(record, answer_to=message.get("message_id"))
            return
        applied = self._apply(record.request_id, text, sender)
        if applied is not None and not applied[1]:
            self.show_outcome(applied[0], replied.get("text"))
        elif applied is not None and applied[1]:
            self._tell(applied[1], answer_to=message.get("message_id"))  # "already resolved …"

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

    def _plain(self, text: str, sender: Sender, message_id: Any = None) -> None:
        """A message that replies to nothing: it answers the open block when exactly one is
        open across the machine; with several, the bot lists them and says how to answer."""
        blocks = self._open_blocks()
        if len(blocks) == 1:
            record, _ = blocks[0]
            if needs_second_tap(record, text):
                self._ask_again(record, answer_to=message_id)
                return
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
        return self.stores.all(self.here)

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
                                            here=self.here, stores=self.stores, hubs=self.hubs,
                                            about=about)  # fmt: skip
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

    def _message(self, record: Request) -> Message:
        """The block's five lines, as they were sent."""
        try:
            holder = self.stores.holding(record.request_id, self.here)
        except LoopkitError:
            holder = None
        holder = holder or self.here
        repo = holder.workspace.repo_name() if holder is not None else "loopkit"
        return message_for(record, repo)

    def _ask_again(self, record: Request, *, query_id: Any = None, answer_to: Any = None) -> None:
        """An irreversible approval takes two taps (SPEC §16): nothing is recorded. The
        block's message is edited to end with "Approve <the command>? This cannot be
        undone." and its Approve button becomes "Yes, approve" (``<id>:<index>:confirm``);
        the tap (or the text reply, answered as a reply) is told the same."""
        question = confirm_question(record)
        message = self._message(record)
        markup = keyboard(message) or {"inline_keyboard": []}
        confirming = {
            callback_data(record.request_id, index): confirm_data(record.request_id, index)
            for index in range(min(len(record.options), len(LETTERS)))
            if approves(record, LETTERS[index])
        }
        offered = False
        for row in markup["inline_keyboard"]:
            for place, button in enumerate(row):
                data = confirming.get(button.get("callback_data"))
                if data is not None and len(data.encode()) <= CALLBACK_DATA_MAX:
                    row[place] = {
                        "text": "Yes, approve: it cannot be undone",
                        "callback_data": data,
                    }
                    offered = True
        message_id = telegram_message_id(record)
        if offered and message_id is not None and self.chat:
            how = "Tap “Yes, approve” under the question to confirm."
            edited = {"chat_id": self.chat, "message_id": message_id,
                      "text": f"{message.text}\n\n{question}", "reply_markup": markup}  # fmt: skip
            self.bot.try_call("editMessageText", edited)
        else:  # no button can carry it (an id too long for one): the other ways
            how = (
                "Approve it in the web inbox, or with `loopkit reply --request-id "
                f"{record.request_id} --reply approve`."
            )
        log.info(
            "telegram_confirm_asked",
            request_id=record.request_id,
            msg=f"telegram: approving {record.request_id} cannot be undone; asked to confirm",
        )
        if query_id is not None:
            self._ack(query_id, f"{question} {how}")
            return
        self._tell(f"{question} {how}", answer_to=answer_to)

    def _tell(self, text: str, *, answer_to: Any = None) -> None:
        """A message in the chat, as a reply to the human's own message when there is one."""
        if not self.chat:
            return
        told: dict[str, Any] = {"chat_id": self.chat, "text": text}
        if isinstance(answer_to, int):
            told["reply_parameters"] = {
                "message_id": answer_to,
                "allow_sending_without_reply": True,
            }
        self.bot.try_call("sendMessage", told)

    def show_outcome(self, record: Request, original: Any = None) -> None:
        """Edit the block's message to end with the outcome; its keyboard goes."""
        message_id = telegram_message_id(record)
        if message_id is None or not self.chat:
            return
        if not isinstance(original, str):
            original = self._message(record).text
        self.bot.try_call(
            "editMessageText",
            {
                "chat_id": self.chat,
                "message_id": message_id,
                "text": f"{original}\n\n{outcome_line(record)}",
                "reply_markup": {"inline_keyboard": []},
            },
        )
