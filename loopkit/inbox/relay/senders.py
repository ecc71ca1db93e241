"""What the relay knows of one bot's messages: who sent an update, which message a request
went out as, and the lines a message is edited to end with once its request is answered
(the outcome, and how the reply was read). Who may answer is
:class:`~loopkit.answering.who.TelegramUser`'s to say."""

from __future__ import annotations

from loopkit import clock
from loopkit.config.people import find
from loopkit.datarecord import record
from loopkit.log import get_logger
from loopkit.message import fold
from loopkit.requests.models import Resolution
from loopkit.requests.reading import told_back

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config.people import Person
    from loopkit.requests.record import Request

log = get_logger("loopkit.phone")


@record(frozen=True, slots=True)
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


def outcome_line(record: Request, here: str | None = None) -> str:
    """The line the message is edited to end with, once the request is no longer open —
    for an answer, with how it was read on a line of its own (:func:`told_back`). An answer
    given elsewhere than ``here`` (the surface showing it) names where: "by Ben via ntfy"."""
    res = record.resolution or Resolution()
    at = _hhmm(res.resolved_at)
    if record.status == "expired":
        minutes = (record.timeout_default or {}).get("after_minutes")
        done = {
            "abort": "loopkit aborted the loop (exit 3)",
            "skip": "loopkit skipped the task",
            "retry": "loopkit retried the task",
        }.get(str(res.action), f"loopkit took the default ({res.action})")
        return f"Expired after {minutes} min, {at}: no answer, {done}."
    if res.outcome == "unblocked":
        return f"Unblocked by hand ({res.via}), {at}."
    if record.status == "dismissed":
        why = f": {fold(res.reason, 80)}" if res.reason else ""
        who = res.by_name or res.by or "someone"
        return f"Dismissed by {who}, {at}: nobody was to answer it{why}."
    chosen = res.chosen_option
    label = next((o.label for o in record.options if o.value == chosen), None)
    what = label or fold(str(res.parsed_decision or ""), 80)
    name = str(res.by_name or res.by or "someone")
    if here is not None and res.via and res.via != here:
        name = f"{res.by or name} via {res.via}"
    return f"Resolved: {what} — by {name}, {at}\n{told_back(record)}"


def telegram_message_id(record: Request) -> int | None:
    for entry in reversed(record.delivery):
        if entry.channel == "telegram" and entry.is_send and isinstance(entry.message_id, int):
            return entry.message_id
    return None


def telegram_messages(
    record: Request, people: tuple[Person, ...], chat: str
) -> list[tuple[str, int]]:
    """Every message the block went out as on Telegram, as (chat, message id): a person's
    in their chat (SPEC §29), the others in the configured ``chat``. Reminders excluded."""
    found: list[tuple[str, int]] = []
    for entry in record.delivery:
        if entry.channel != "telegram" or not entry.is_send or entry.reminder:
            continue
        if not isinstance(entry.message_id, int):
            continue
        person = find(people, entry.person) if entry.person else None
        where = person.address if person is not None else (None if entry.person else chat)
        if where and (where, entry.message_id) not in found:
            found.append((where, entry.message_id))
    return found
