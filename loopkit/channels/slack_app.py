"""Channel ``slack`` with ``[escalation] slack_mode = "socket"``: a Slack app, two-way.

The block is posted with ``chat.postMessage`` as the five lines (the notification text) and
Block Kit: the five lines as a section, then one button per choice whose ``value`` is
``<request_id>:<index>`` — the Telegram button's ``callback_data``, read by the same code
(https://api.slack.com/reference/block-kit/block-elements#button). Clicks and thread replies
come back over Socket Mode (:mod:`loopkit.inbox.relay.slack_socket`). A delivery's
``message_id`` is ``<channel id>:<ts>``: the two things ``chat.update`` and a thread reply
need. A reminder is a reply in the block's thread.
"""

from __future__ import annotations

import time

from loopkit import extras
from loopkit.channels import Outcome
from loopkit.channels.slack_web import SlackCallError, SlackWeb, token_problems
from loopkit.channels.telegram import callback_data
from loopkit.message import LETTERS, Message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.message import Note

SECTION_MAX = 3000  # characters of a section's text (Block Kit)
BUTTON_TEXT_MAX = 75  # characters of a button's text
VALUE_MAX = 2000  # characters of a button's value


def escape(text: str) -> str:
    """Slack's three control characters escaped, so nothing in a question can mention
    ``<!channel>`` or forge a link (https://api.slack.com/reference/surfaces/formatting)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def message_ref(channel: str, ts: str) -> str:
    return f"{channel}:{ts}"


def split_ref(ref: Any) -> tuple[str, str] | None:
    """``(channel id, ts)`` from a delivery's ``message_id``; None for anything else."""
    if not isinstance(ref, str) or ":" not in ref:
        return None
    channel, _, ts = ref.partition(":")
    return (channel, ts) if channel and ts else None


def blocks(message: Note, *, outcome: str | None = None) -> list[dict[str, Any]]:
    """The message's blocks: its text, then its buttons — or, once answered, the outcome in
    their place."""
    found: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "plain_text", "text": message.text[:SECTION_MAX]}}
    ]
    if outcome is not None:
        found.append({"type": "section", "text": {"type": "plain_text", "text": outcome}})
        return found
    buttons: list[dict[str, Any]] = []
    for index, label in enumerate(message.labels[: len(LETTERS)]):
        value = callback_data(message.request_id, index)
        if len(value) > VALUE_MAX:
            break
        text = f"{LETTERS[index]}) {label}"[:BUTTON_TEXT_MAX]
        buttons.append(
            {
                "type": "button",
                "action_id": f"loopkit-choice-{index}",
                "text": {"type": "plain_text", "text": text},
                "value": value,
            }
        )
    link = getattr(message, "link", None)
    if link:
        buttons.append(
            {
                "type": "button",
                "action_id": "loopkit-open",
                "text": {"type": "plain_text", "text": "Open"},
                "url": link,
            }
        )
    if buttons:
        found.append({"type": "actions", "block_id": "loopkit-choices", "elements": buttons})
    return found


class SlackAppChannel:
    name = "slack"

    def __init__(
        self,
        settings: ChannelSettings,
        *,
        budget: float = 10.0,
        sleep: Callable[[float], None] = time.sleep,
        **_: Any,
    ) -> None:
        self.settings = settings
        self.budget = budget
        self._sleep = sleep

    def problems(self) -> list[str]:
        if not extras.installed("slack_sdk"):  # before a client, which imports it
            return [extras.needs("slack_sdk")]
        return token_problems(self.settings)

    def send(self, message: Note) -> Outcome:
        missing = self.problems()
        if missing:
            return Outcome(ok=False, status="error", error=missing[0], hard=True)
        web = SlackWeb(self.settings, sleep=self._sleep)
        args: dict[str, Any] = {
            "channel": self.settings.slack_channel,
            "text": escape(message.text),
            "unfurl_links": False,
        }
        if isinstance(message, Message):
            args["blocks"] = blocks(message)
        thread = split_ref(message.reply_to)
        if thread is not None:  # a reminder: a reply in the block's thread
            args["channel"], args["thread_ts"] = thread
        try:
            answer = web.call("chat.postMessage", args, budget=self.budget)
        except SlackCallError as exc:
            return Outcome(ok=False, status=exc.status, error=str(exc), hard=exc.hard)
        channel, ts = answer.get("channel"), answer.get("ts")
        ref = message_ref(channel, ts) if isinstance(channel, str) and isinstance(ts, str) else None
        return Outcome(ok=True, status=200, message_id=ref)
