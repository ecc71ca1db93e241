"""What the phone poller knows of one bot's messages: who sent an update, which message a
request went out as, and the line a message is edited to end with once its request is
answered. The bot's lease and offset are :mod:`loopkit.home.bot`'s (re-exported here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loopkit import clock
from loopkit.home.bot import BotLease as BotLease
from loopkit.home.bot import OffsetFile as OffsetFile
from loopkit.home.bot import bot_id as bot_id
from loopkit.log import get_logger
from loopkit.message import fold
from loopkit.requests.record import Request

log = get_logger("loopkit.phone")


@dataclass(frozen=True, slots=True)
class Sender:
    user_id: int | None
    name: str

    @property
    def by(self) -> str:
        return f"{self.user_id} ({self.name})"


def sender_of(user: Any) -> Sender:
    if not isinstance(user, dict):
        return Sender(None, "unknown")
    name = " ".join(str(user.get(k)) for k in ("first_name", "last_name") if user.get(k))
    name = name or str(user.get("username") or "unknown")
    user_id = user.get("id")
    return Sender(user_id if isinstance(user_id, int) else None, fold(name, 60))


def _hhmm(at: str | None) -> str:
    try:
        moment = clock.parse_iso(at) if at else clock.now()
    except ValueError:
        moment = clock.now()
    return f"{moment:%H:%M} UTC"


def outcome_line(record: Request) -> str:
    """The line the message is edited to end with, once the request is no longer open."""
    res = record.resolution or {}
    at = _hhmm(res.get("resolved_at"))
    if record.status == "expired":
        minutes = (record.timeout_default or {}).get("after_minutes")
        done = {
            "abort": "loopkit aborted the loop (exit 3)",
            "skip": "loopkit skipped the task",
            "retry": "loopkit retried the task",
        }.get(str(res.get("action")), f"loopkit took the default ({res.get('action')})")
        return f"Expired after {minutes} min, {at}: no answer, {done}."
    if res.get("outcome") == "unblocked":
        return f"Unblocked by hand ({res.get('via')}), {at}."
    chosen = res.get("chosen_option")
    label = next((str(o.get("label")) for o in record.options if o.get("value") == chosen), None)
    what = label or fold(str(res.get("parsed_decision") or ""), 80)
    name = str(res.get("by_name") or res.get("by") or "someone")
    return f"Resolved: {what} — by {name}, {at}"


def telegram_message_id(record: Request) -> int | None:
    for entry in reversed(record.delivery):
        if entry.get("channel") == "telegram" and isinstance(entry.get("message_id"), int):
            return int(entry["message_id"])
    return None
