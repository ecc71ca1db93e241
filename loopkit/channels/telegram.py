"""Channel ``telegram``: ``sendMessage`` with one inline button per choice.

The call goes through :class:`~loopkit.channels.telegram_api.BotApi`, the one Bot API client.
"""

from __future__ import annotations

from loopkit.channels import Outcome
from loopkit.channels.http import HttpChannel
from loopkit.channels.telegram_api import BotApi
from loopkit.message import LETTERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.message import Note

CALLBACK_DATA_MAX = 64  # bytes, a Bot API limit


CONFIRM = "confirm"  # the second tap on an irreversible approval: <request_id>:<index>:confirm


def callback_data(request_id: str, index: int) -> str:
    return f"{request_id}:{index}"


def confirm_data(request_id: str, index: int) -> str:
    """The button that confirms an irreversible approval (SPEC §16): only it records one."""
    return f"{callback_data(request_id, index)}:{CONFIRM}"


def keyboard(message: Note) -> dict[str, Any] | None:
    rows = []
    for index, label in enumerate(message.labels):
        data = callback_data(message.request_id, index)
        if len(data.encode()) > CALLBACK_DATA_MAX:
            return None  # an id this long cannot ride on a button; text replies still work
        rows.append([{"text": f"{LETTERS[index]}) {label}", "callback_data": data}])
    link = getattr(message, "link", None)
    if link:
        rows.append([{"text": "Open", "url": link}])
    return {"inline_keyboard": rows} if rows else None


class TelegramChannel(HttpChannel):
    name = "telegram"

    def problems(self) -> list[str]:
        found = []
        if not self.settings.telegram_token:
            found.append(
                "LOOPKIT_HITL_TELEGRAM_TOKEN is not set: create a bot with @BotFather and "
                "export its token"
            )
        if not self.settings.telegram_chat:
            found.append(
                "LOOPKIT_HITL_TELEGRAM_CHAT is not set: send your bot a message, then read "
                "the chat id from getUpdates (see README, Telegram)"
            )
        return found

    def send(self, message: Note) -> Outcome:
        missing = self.problems()
        if missing:
            return Outcome(ok=False, status="error", error=missing[0].split(":")[0])
        payload: dict[str, Any] = {
            "chat_id": self.settings.telegram_chat,
            "text": message.text,
            "disable_web_page_preview": True,
        }
        markup = keyboard(message)
        if markup:
            payload["reply_markup"] = markup
        if message.reply_to is not None:  # a reminder: a reply to the block's message
            payload["reply_parameters"] = {
                "message_id": message.reply_to,
                "allow_sending_without_reply": True,
            }
        api = BotApi(self.settings, client=self._client, sleep=self._sleep)
        try:
            answer = api.post("sendMessage", payload, budget=self.budget)
        finally:
            if self._client is None:
                api.close()
        result = answer.body.get("result") if isinstance(answer.body, dict) else None
        message_id = result.get("message_id") if isinstance(result, dict) else None
        return Outcome.of(answer, message_id=None if answer.error else message_id)
