"""The relay's router: one Telegram update → the request it answers, wherever it is.

A tap names its request on the button (``<request_id>:<index>``); a reply names it by the
message it replies to; a plain message answers the one open block, when exactly one is open
across the machine. Bot commands (``/loops``, ``/pause <repo>`` …), ``@repo`` notes and
replies to a message about one loop steer loops (:mod:`~loopkit.inbox.relay.commands`).
The answer goes through the answering service (:mod:`loopkit.answering.service`) — this
machine's workspaces first, then the fleets — exactly once, and the block's ``BLOCKED.md``
goes. Who may answer is :class:`~loopkit.answering.who.TelegramUser`'s to say.
"""

from __future__ import annotations

from loopkit.answering.who import Answerer, TelegramUser, same_chat
from loopkit.channels.telegram import (
    CALLBACK_DATA_MAX,
    CONFIRM,
    callback_data,
    confirm_data,
    keyboard,
)
from loopkit.inbox.relay.base import AnswerRouter
from loopkit.inbox.relay.commands import LoopCommands
from loopkit.inbox.relay.senders import (
    outcome_line,
    sender_of,
    telegram_message_id,
    telegram_messages,
)
from loopkit.log import get_logger
from loopkit.message import LETTERS, fold
from loopkit.requests.irreversible import always, approves, is_irreversible
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.answering.service import Answering, Confirm
    from loopkit.answering.who import TelegramAllowed
    from loopkit.channels.telegram_api import BotApi
    from loopkit.inbox.relay.base import Decided
    from loopkit.inbox.relay.senders import Sender
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.phone")


def _chat(message: dict[str, Any]) -> dict[str, Any]:
    chat = message.get("chat")
    return chat if isinstance(chat, dict) else {}


def _chat_id(message: dict[str, Any]) -> Any:
    chat = message.get("chat")
    return chat.get("id") if isinstance(chat, dict) else None


def _has_people(record: Request) -> bool:
    return any(entry.person for entry in record.delivery)


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


class Router(AnswerRouter):
    """Routes a bot's updates to the requests they answer, through the answering service
    (which looks at the assembling workspace's store first, then every registered one's,
    then the fleets')."""

    via = "telegram"

    def __init__(self, bot: BotApi, allowed: TelegramAllowed, *, answering: Answering) -> None:
        super().__init__(answering)
        self.bot = bot
        self.allowed = allowed
        # /loops, /pause …, @repo notes: any machine's loop, with a fleet
        self.loop_commands = LoopCommands(bot, allowed.chat, fleet=answering.hubs)

    @property
    def chat(self) -> str:
        return self.allowed.chat

    def _who(self, user: Any, chat: Any) -> tuple[Sender, Answerer]:
        """The update's sender, and who they are to the answering service."""
        sender = sender_of(user)
        who = Answerer(
            by=sender.by,
            via="telegram",
            origin=TelegramUser(self.allowed, chat, sender.user_id),
            about={"by_id": sender.user_id, "by_name": sender.name},
        )
        return sender, who

    def handle(self, update: dict[str, Any]) -> None:
        if isinstance(update.get("callback_query"), dict):
            self._tap(update["callback_query"])
        elif isinstance(update.get("message"), dict):
            self._text(update["message"])

    def _tap(self, query: dict[str, Any]) -> None:
        raw = query.get("message")
        message: dict[str, Any] = raw if isinstance(raw, dict) else {}
        sender, who = self._who(query.get("from"), message.get("chat"))
        query_id = query.get("id")
        if who.refusal() is not None:
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
        target = self.find(request_id)
        if target is None:
            self._ack(query_id, "unknown request")
            return
        sent = self._messages(target)  # (chat, message id): message ids count per chat
        chat_of = _chat(message)
        tapped = message.get("message_id")
        sent_as = next((m for c, m in sent if m == tapped and same_chat(chat_of, c)), None)
        if index >= min(len(target.options), len(LETTERS)) or (sent and sent_as is None):
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
        decided = self.decide(request_id, reply, who, confirmed=confirmed)
        chat = _chat_id(message)
        if decided.confirm is not None:
            self._ask_again(decided.confirm, query_id=query_id, chat=chat, sent_as=sent_as)
        elif decided.answered is None:
            self._ack(query_id, decided.already or "unknown request")
        else:
            said = outcome_line(decided.answered.record, self.via)
            self._ack(query_id, f"{said}\n{decided.caveat}" if decided.caveat else said)
            self.show_outcome(decided.answered.record, message.get("text"))

    def _text(self, message: dict[str, Any]) -> None:
        sender, who = self._who(message.get("from"), message.get("chat"))
        replied = message.get("reply_to_message")
        text = message.get("text")
        if not isinstance(text, str):
            return  # a sticker, a photo: nothing to answer with
        allowed = who.refusal() is None
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
                self._plain(text, who, message.get("message_id"), _chat_id(message))
            return
        if not allowed:
            log.warning(
                "telegram_not_allowed",
                user=sender.user_id,
                msg=f"telegram: ignored a reply from {sender.by}: not allowed",
            )
            return
        record = self._request_for_message(replied.get("message_id"), _chat(message))
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
        decided = self.decide(record.request_id, text, who, confirmed=False)
        chat = _chat_id(message)
        self._decided(decided, message.get("message_id"), replied.get("text"), chat=chat,
                      sent_as=replied.get("message_id"))  # fmt: skip

    def _decided(
        self,
        decided: Decided,
        answer_to: Any,
        original: Any = None,
        *,
        chat: Any = None,
        sent_as: Any = None,
    ) -> None:
        """A typed reply's outcome in the chat: the block's message edited, a second tap
        asked for, or "already resolved …" in reply to the human's message."""
        if decided.confirm is not None:
            self._ask_again(decided.confirm, answer_to=answer_to, chat=chat, sent_as=sent_as)
        elif decided.answered is not None:
            self.show_outcome(decided.answered.record, original)
            if decided.caveat:
                self._tell(decided.caveat, answer_to=answer_to, chat=chat)
        elif decided.already and decided.record is not None:
            self._tell(decided.already, answer_to=answer_to, chat=chat)

    def _open_blocks(self) -> list[tuple[Request, RequestStore]]:
        """Every open block sent to this chat, across the machine's workspaces."""
        found = []
        for store in self._stores():
            for _, record in store.all():
                if not (isinstance(record, Request) and record.is_open and record.has_own_block):
                    continue
                if self._messages(record):
                    found.append((record, store))
        return found

    def _plain(self, text: str, who: Answerer, message_id: Any = None, chat: Any = None) -> None:
        """A message that replies to nothing: it answers the open block when exactly one is
        open across the machine; with several, the bot lists them and says how to answer."""
        blocks = self._open_blocks()
        if len(blocks) == 1:
            record, _ = blocks[0]
            decided = self.decide(record.request_id, text, who, confirmed=False)
            if decided.already is None:
                self._decided(decided, message_id, chat=chat)
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
        return self.answering.stores.all(self.answering.here)

    def _request_for_message(self, message_id: Any, chat: dict[str, Any]) -> Request | None:
        """The request whose message (in ``chat``: message ids count per chat) is this."""
        if not isinstance(message_id, int):
            return None
        for store in self._stores():
            for _, record in store.all():
                if isinstance(record, Request) and any(
                    m == message_id and same_chat(chat, c) for c, m in self._messages(record)
                ):
                    return record
        return None

    def _messages(self, record: Request) -> list[tuple[str, int]]:
        """The block's messages on Telegram: (chat, message id) — each person's in their
        chat (SPEC §29), else in the configured chat."""
        people = self.answering.people_for(record.request_id) if _has_people(record) else ()
        return telegram_messages(record, people, self.chat)

    def _ack(self, query_id: Any, text: str) -> None:
        if query_id is not None:
            self.bot.try_call(
                "answerCallbackQuery", {"callback_query_id": query_id, "text": fold(text, 190)}
            )

    def _ask_again(
        self,
        confirm: Confirm,
        *,
        query_id: Any = None,
        answer_to: Any = None,
        chat: Any = None,
        sent_as: Any = None,
    ) -> None:
        """An irreversible approval takes two taps (SPEC §16): nothing is recorded. The
        block's message is edited to end with "Approve <the command>? This cannot be
        undone." and its Approve button becomes "Yes, approve" (``<id>:<index>:confirm``);
        the tap (or the text reply, answered as a reply) is told the same."""
        record, question = confirm.record, confirm.question
        message = self.message_of(record)
        markup = keyboard(message) or {"inline_keyboard": []}
        confirming = {
            callback_data(record.request_id, index): (
                confirm_data(record.request_id, index),
                # "Allow always here" (SPEC §30) says what it confirms
                "Yes, allow always here" if always(record, LETTERS[index])
                else "Yes, approve: it cannot be undone",
            )
            for index in range(min(len(record.options), len(LETTERS)))
            if approves(record, LETTERS[index])
        }  # fmt: skip
        offered = False
        for row in markup["inline_keyboard"]:
            for place, button in enumerate(row):
                data, label = confirming.get(button.get("callback_data"), (None, ""))
                if data is not None and len(data.encode()) <= CALLBACK_DATA_MAX:
                    row[place] = {"text": label, "callback_data": data}
                    offered = True
        message_id = sent_as if isinstance(sent_as, int) else telegram_message_id(record)
        where = chat if chat is not None else self.chat
        if offered and message_id is not None and where:
            how = "Tap “Yes, approve” under the question to confirm."
            edited = {"chat_id": where, "message_id": message_id,
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
        self._tell(f"{question} {how}", answer_to=answer_to, chat=chat)

    def _tell(self, text: str, *, answer_to: Any = None, chat: Any = None) -> None:
        """A message in the chat (the human's own, else the configured one), as a reply to
        the human's own message when there is one."""
        where = chat if chat is not None else self.chat
        if not where:
            return
        told: dict[str, Any] = {"chat_id": where, "text": text}
        if isinstance(answer_to, int):
            told["reply_parameters"] = {
                "message_id": answer_to,
                "allow_sending_without_reply": True,
            }
        self.bot.try_call("sendMessage", told)

    def show_outcome(self, record: Request, original: Any = None) -> None:
        """Edit the block's message — each person's (SPEC §29: "answered by NAME via
        CHANNEL") — to end with the outcome; its keyboard goes."""
        sent = self._messages(record)
        if not sent:
            return
        if not isinstance(original, str) or len(sent) > 1:
            original = self.message_of(record).text
        for chat, message_id in sent:
            self.bot.try_call(
                "editMessageText",
                {
                    "chat_id": chat,
                    "message_id": message_id,
                    "text": f"{original}\n\n{outcome_line(record, self.via)}",
                    "reply_markup": {"inline_keyboard": []},
                },
            )
