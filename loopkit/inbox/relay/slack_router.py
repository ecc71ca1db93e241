"""The Slack relay's router: one Socket Mode payload → the request it answers, wherever it is.

It decides exactly as a Telegram tap or reply does (SPEC §7, §10, §16, §21): a button click
(``block_actions``) carries ``<request_id>:<index>`` in its ``value``, read by the same
:func:`~loopkit.inbox.relay.router.parse_button`; a reply in the block's thread is read like
``loopkit reply``; the answer is recorded once through the answering service
(:mod:`loopkit.answering.service`, ``via: "slack"``), and the block's ``BLOCKED.md`` goes.
Only a click on the block's own message counts (another message's button carrying this id is
forged). Only ``LOOPKIT_HITL_SLACK_ALLOWED_USERS`` (when set) decide; anyone else is told
"not allowed" (an ephemeral message only they see). An answer to a request already answered
is told "already answered …". On resolution the message is replaced (``chat.update``) with
the five lines and the outcome, its buttons gone.
"""

from __future__ import annotations

from loopkit.answering.who import Answerer, SlackUser
from loopkit.channels.slack_app import blocks, escape, split_ref
from loopkit.channels.telegram import confirm_data
from loopkit.inbox.relay.base import AnswerRouter
from loopkit.inbox.relay.router import parse_button
from loopkit.inbox.relay.senders import Sender, outcome_line
from loopkit.log import get_logger
from loopkit.message import LETTERS, fold
from loopkit.requests.irreversible import always, approves, is_irreversible
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.answering.service import Answering, Confirm
    from loopkit.answering.who import SlackAllowed
    from loopkit.channels.slack_web import SlackWeb

log = get_logger("loopkit.phone")

NOT_ALLOWED = "not allowed: you are not among the people who may answer loopkit's questions"


def slack_ref(record: Request) -> tuple[str, str] | None:
    """``(channel id, ts)`` of the block's message on Slack, when it went out there."""
    refs = slack_refs(record)
    return refs[-1] if refs else None


def slack_refs(record: Request) -> list[tuple[str, str]]:
    """Every message the block went out as on Slack (each person's, SPEC §29), in order."""
    found: list[tuple[str, str]] = []
    for entry in record.delivery:
        if entry.channel == "slack" and entry.ok and entry.is_send and not entry.reminder:
            ref = split_ref(entry.message_id)
            if ref is not None and ref not in found:
                found.append(ref)
    return found


def slack_sender(user: Any, fallback: Any = None) -> tuple[str | None, Sender]:
    """The user's id (``U…``) and who they are, as a record keeps them."""
    if isinstance(user, dict):
        user_id = user.get("id")
        name = user.get("name") or user.get("username") or user_id
    else:
        user_id, name = (fallback, fallback)
    user_id = user_id if isinstance(user_id, str) and user_id else None
    return user_id, Sender(None, fold(str(name or "unknown"), 60))


class SlackRouter(AnswerRouter):
    """Routes one Slack app's clicks and thread replies to the requests they answer,
    through the answering service."""

    via = "slack"

    def __init__(self, web: SlackWeb, allowed: SlackAllowed, *, answering: Answering) -> None:
        super().__init__(answering)
        self.web = web
        self.allowed = allowed

    def _who(self, user_id: str | None, sender: Sender) -> Answerer:
        return Answerer(
            by=f"{user_id} ({sender.name})",
            via="slack",
            origin=SlackUser(self.allowed, user_id),
            about={"by_id": user_id, "by_name": sender.name},
        )

    def handle(self, kind: str, payload: dict[str, Any]) -> None:
        """One envelope's payload: ``interactive`` (a click) or ``events_api`` (a message)."""
        if kind == "interactive" and payload.get("type") == "block_actions":
            self._click(payload)
        elif kind == "events_api" and isinstance(payload.get("event"), dict):
            event = payload["event"]
            if event.get("type") == "message":
                self._reply(event)

    # --- a click --------------------------------------------------------------------------

    def _click(self, payload: dict[str, Any]) -> None:
        user_id, sender = slack_sender(payload.get("user"))
        container = _get(payload, "container")
        channel = _get(container, "channel_id") or _get(payload.get("channel"), "id")
        ts = _get(container, "message_ts") or _get(payload.get("message"), "ts")
        actions = payload.get("actions")
        actions = actions if isinstance(actions, list) else []
        values = [a.get("value") for a in actions if isinstance(a, dict) and a.get("value")]
        if not values:
            return  # the "Open" link button: Slack opens the page, nothing to decide
        who = self._who(user_id, sender)
        if who.refusal() is not None:
            log.warning(
                "slack_not_allowed",
                user=user_id,
                msg=f"slack: ignored a click from {sender.name} ({user_id}): not allowed",
            )
            self._whisper(channel, user_id, NOT_ALLOWED)
            return
        button = parse_button(values[0])
        target = self.find(button[0]) if button else None
        if button is None or target is None or slack_ref(target) != (channel, ts):
            self._whisper(
                channel, user_id, "unknown button: this question is not loopkit's to answer here"
            )
            return
        request_id, index, confirmed = button
        if index >= min(len(target.options), len(LETTERS)):
            self._whisper(channel, user_id, "unknown button")
            return
        reply = LETTERS[index]
        if confirmed and not (is_irreversible(target) and approves(target, reply)):
            self._whisper(channel, user_id, "unknown button")
            return
        self._decide(request_id, reply, who, channel, confirmed=confirmed, thread=None)

    # --- a reply in the block's thread ----------------------------------------------------

    def _reply(self, event: dict[str, Any]) -> None:
        if event.get("bot_id") or event.get("subtype"):
            return  # loopkit's own messages, edits, joins: nothing to answer with
        thread, text, channel = event.get("thread_ts"), event.get("text"), event.get("channel")
        if not (isinstance(thread, str) and isinstance(text, str) and thread != event.get("ts")):
            return  # chatter in the channel, not a reply to a block
        user_id, sender = slack_sender(None, event.get("user"))
        record = self._request_for(channel, thread)
        if record is None:
            return
        who = self._who(user_id, sender)
        if who.refusal() is not None:
            log.warning(
                "slack_not_allowed",
                user=user_id,
                msg=f"slack: ignored a reply from {user_id}: not allowed",
            )
            self._whisper(channel, user_id, NOT_ALLOWED)
            return
        self._decide(record.request_id, text, who, channel, confirmed=False, thread=thread)

    # --- shared ---------------------------------------------------------------------------

    def _decide(
        self, request_id: str, reply: str, who: Answerer, channel: Any, *, confirmed: bool,
        thread: str | None,
    ) -> None:  # fmt: skip
        user_id = (who.about or {}).get("by_id")
        decided = self.decide(request_id, reply, who, confirmed=confirmed)
        if decided.confirm is not None:
            self._ask_again(decided.confirm, channel, user_id)
        elif decided.answered is not None:
            self.show_outcome(decided.answered.record)
            if decided.caveat:
                self._whisper(channel, user_id, decided.caveat, thread=thread)
        elif decided.already is not None:  # "already resolved by … via …"
            self._whisper(channel, user_id, decided.already, thread=thread)

    def _request_for(self, channel: Any, ts: str) -> Request | None:
        for store in self.answering.stores.all(self.answering.here):
            for _, stored in store.all():
                if isinstance(stored, Request) and slack_ref(stored) == (channel, ts):
                    return stored
        return None

    def _whisper(
        self, channel: Any, user_id: str | None, text: str, *, thread: str | None = None
    ) -> None:
        """A message only ``user_id`` sees (``chat.postEphemeral``)."""
        if not (isinstance(channel, str) and user_id):
            return
        args: dict[str, Any] = {"channel": channel, "user": user_id, "text": escape(text)}
        if thread:
            args["thread_ts"] = thread
        self.web.try_call("chat.postEphemeral", args)

    def _ask_again(self, confirm: Confirm, channel: Any, user_id: str | None) -> None:
        """An irreversible approval takes two clicks (SPEC §16): the block's Approve button
        becomes "Yes, approve" (``<id>:<index>:confirm``); nothing is recorded."""
        record, question = confirm.record, confirm.question
        ref = slack_ref(record)
        if ref is None:
            return
        message = self.message_of(record)
        shown = blocks(message)
        for block in shown:
            for button in block.get("elements", []):
                value = parse_button(button.get("value"))
                if value and approves(record, LETTERS[value[1]]):
                    button["value"] = confirm_data(record.request_id, value[1])
                    label = ("Yes, allow always here" if always(record, LETTERS[value[1]])
                             else "Yes, approve: no undo")  # fmt: skip
                    button["text"] = {"type": "plain_text", "text": label}
                    button["style"] = "danger"
        shown.insert(1, {"type": "section", "text": {"type": "plain_text", "text": question}})
        self.web.try_call(
            "chat.update",
            {
                "channel": ref[0],
                "ts": ref[1],
                "blocks": shown,
                "text": escape(f"{message.text}\n\n{question}"),
            },
        )
        self._whisper(channel, user_id, f"{question} Click “Yes, approve” to confirm.")

    def show_outcome(self, record: Request) -> None:
        """Replace the block's message — each person's — with its five lines and the
        outcome, no buttons."""
        refs = slack_refs(record)
        if not refs or record.is_open:
            return
        message = self.message_of(record)
        outcome = outcome_line(record, self.via)
        for channel, ts in refs:
            self.web.try_call(
                "chat.update",
                {
                    "channel": channel,
                    "ts": ts,
                    "text": escape(f"{message.text}\n\n{outcome}"),
                    "blocks": blocks(message, outcome=outcome),
                },
            )


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None
