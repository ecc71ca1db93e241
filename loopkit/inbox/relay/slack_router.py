"""The Slack relay's router: one Socket Mode payload → the request it answers, wherever it is.

It decides exactly as a Telegram tap or reply does (SPEC §7, §10, §16, §21): a button click
(``block_actions``) carries ``<request_id>:<index>`` in its ``value``, read by the same
:func:`~loopkit.inbox.relay.router.parse_button`; a reply in the block's thread is read like
``loopkit reply``; the answer is recorded once through
:func:`~loopkit.fleet.route.answer_anywhere` (``via: "slack"``), and the block's
``BLOCKED.md`` goes. Only a click on the block's own message counts (another message's
button carrying this id is forged). Only ``LOOPKIT_HITL_SLACK_ALLOWED_USERS`` (when set)
decide; anyone else is told "not allowed" (an ephemeral message only they see). An answer to
a request already answered is told "already answered …". On resolution the message is
replaced (``chat.update``) with the five lines and the outcome, its buttons gone.
"""

from __future__ import annotations

from loopkit.channels.slack_app import blocks, escape, split_ref
from loopkit.channels.telegram import confirm_data
from loopkit.datarecord import record
from loopkit.errors import LoopkitError, RequestConflict
from loopkit.escalation.blockfile import remove_block
from loopkit.escalation.sender import message_for
from loopkit.fleet.route import answer_anywhere
from loopkit.inbox.relay.router import parse_button
from loopkit.inbox.relay.senders import Sender, outcome_line
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

    from loopkit.channels.slack_web import SlackWeb
    from loopkit.config import ChannelSettings
    from loopkit.fleet import Hubs
    from loopkit.message import Message
    from loopkit.requests.locate import Stores
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.phone")

NOT_ALLOWED = "not allowed: you are not among the people who may answer loopkit's questions"


def slack_ref(record: Request) -> tuple[str, str] | None:
    """``(channel id, ts)`` of the block's message on Slack, when it went out there."""
    for entry in reversed(record.delivery):
        if entry.channel == "slack" and entry.ok:
            found = split_ref(entry.message_id)
            if found is not None:
                return found
    return None


@record(frozen=True, slots=True)
class SlackAllowed:
    """The Slack users who may decide (none listed: anyone in the channel)."""

    users: frozenset[str]

    @classmethod
    def of(cls, settings: ChannelSettings) -> SlackAllowed:
        return cls(frozenset(settings.slack_allowed_users))

    def user_ok(self, user_id: str | None) -> bool:
        return not self.users or (user_id is not None and user_id in self.users)


def slack_sender(user: Any, fallback: Any = None) -> tuple[str | None, Sender]:
    """The user's id (``U…``) and who they are, as a record keeps them."""
    if isinstance(user, dict):
        user_id = user.get("id")
        name = user.get("name") or user.get("username") or user_id
    else:
        user_id, name = (fallback, fallback)
    user_id = user_id if isinstance(user_id, str) and user_id else None
    return user_id, Sender(None, fold(str(name or "unknown"), 60))


class SlackRouter:
    """Routes one Slack app's clicks and thread replies to the requests they answer.

    ``here`` is the assembling workspace's own store (looked at first; None for ``serve``),
    ``stores`` every registered workspace's, ``hubs`` the fleets for other machines'."""

    def __init__(
        self,
        web: SlackWeb,
        allowed: SlackAllowed,
        *,
        stores: Stores,
        hubs: Hubs,
        here: RequestStore | None = None,
    ) -> None:
        self.web = web
        self.allowed = allowed
        self.stores = stores
        self.hubs = hubs
        self.here = here

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
        if not self.allowed.user_ok(user_id):
            log.warning(
                "slack_not_allowed",
                user=user_id,
                msg=f"slack: ignored a click from {sender.name} ({user_id}): not allowed",
            )
            self._whisper(channel, user_id, NOT_ALLOWED)
            return
        button = parse_button(values[0])
        target = self._find(button[0]) if button else None
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
        if not confirmed and needs_second_tap(target, reply):
            self._ask_again(target, channel, user_id)
            return
        self._decide(request_id, reply, user_id, sender, channel, thread=None)

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
        if not self.allowed.user_ok(user_id):
            log.warning(
                "slack_not_allowed",
                user=user_id,
                msg=f"slack: ignored a reply from {user_id}: not allowed",
            )
            self._whisper(channel, user_id, NOT_ALLOWED)
            return
        if needs_second_tap(record, text):
            self._ask_again(record, channel, user_id)
            return
        self._decide(record.request_id, text, user_id, sender, channel, thread=thread)

    # --- shared ---------------------------------------------------------------------------

    def _decide(
        self,
        request_id: str,
        reply: str,
        user_id: str | None,
        sender: Sender,
        channel: Any,
        *,
        thread: str | None,
    ) -> None:
        by = f"{user_id} ({sender.name})"
        about = {"by_id": user_id, "by_name": sender.name}
        try:
            result, store = answer_anywhere(
                request_id,
                reply,
                by=by,
                via="slack",
                here=self.here,
                stores=self.stores,
                hubs=self.hubs,
                about=about,
            )
        except RequestConflict as conflict:  # "already resolved by … via …"
            self._whisper(channel, user_id, fold(str(conflict), 190), thread=thread)
            return
        except LoopkitError as exc:
            log.warning("slack_answer_failed", msg=f"slack: answer not applied: {exc}")
            return
        if store is not None and not result.deferred:
            remove_block(store.workspace.blocked, result.record)
        log.info(
            "slack_answer",
            request_id=request_id,
            by=by,
            msg=f"slack: {sender.name} answered {request_id}",
        )
        self.show_outcome(result.record)

    def _find(self, request_id: str) -> Request | None:
        try:
            store = self.stores.holding(request_id, self.here)
            if store is not None:
                return store.load(request_id)
        except LoopkitError:
            pass
        found = self.hubs.find(request_id)
        return found[1].record if found else None

    def _request_for(self, channel: Any, ts: str) -> Request | None:
        for store in self.stores.all(self.here):
            for _, stored in store.all():
                if isinstance(stored, Request) and slack_ref(stored) == (channel, ts):
                    return stored
        return None

    def _message(self, record: Request) -> Message:
        try:
            holder = self.stores.holding(record.request_id, self.here) or self.here
        except LoopkitError:
            holder = self.here
        repo = holder.workspace.repo_name() if holder is not None else "loopkit"
        return message_for(record, repo)

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

    def _ask_again(self, record: Request, channel: Any, user_id: str | None) -> None:
        """An irreversible approval takes two clicks (SPEC §16): the block's Approve button
        becomes "Yes, approve" (``<id>:<index>:confirm``); nothing is recorded."""
        ref = slack_ref(record)
        question = confirm_question(record)
        if ref is None:
            return
        message = self._message(record)
        shown = blocks(message)
        for block in shown:
            for button in block.get("elements", []):
                value = parse_button(button.get("value"))
                if value and approves(record, LETTERS[value[1]]):
                    button["value"] = confirm_data(record.request_id, value[1])
                    button["text"] = {"type": "plain_text", "text": "Yes, approve: no undo"}
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
        """Replace the block's message with its five lines and the outcome, no buttons."""
        ref = slack_ref(record)
        if ref is None or record.is_open:
            return
        message = self._message(record)
        outcome = outcome_line(record)
        self.web.try_call(
            "chat.update",
            {
                "channel": ref[0],
                "ts": ref[1],
                "text": escape(f"{message.text}\n\n{outcome}"),
                "blocks": blocks(message, outcome=outcome),
            },
        )


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None
