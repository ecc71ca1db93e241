"""What the phone poller knows of one bot and its messages: who sent an update, the bot's
lease and offset in ``LOOPKIT_HOME`` (one per bot on the machine), which message a request went out
as, and the line a message is edited to end with once its request is answered."""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopkit import atomicfile, clock, readfile
from loopkit.home import home
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


def bot_id(token: str | None) -> str:
    """The bot's public user id (the token's part before the colon): not a secret."""
    return (token or "").split(":", 1)[0] or "unknown"


class OffsetFile:
    """``LOOPKIT_HOME/telegram/<bot-id>.json``: the next update offset — one per bot on the
    machine, whichever process polls it (SPEC §10). No token is written."""

    def __init__(self, token: str | None, root: Path | None = None) -> None:
        self.bot = bot_id(token)
        self.path = (root or home()) / "telegram" / f"{self.bot}.json"

    def load(self) -> int | None:
        try:
            data = readfile.json_document(readfile.read_text(self.path))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("bot") != self.bot:
            return None
        offset = data.get("offset")
        return offset if isinstance(offset, int) else None

    def save(self, offset: int) -> None:
        self.path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomicfile.write_json(
            self.path, {"bot": self.bot, "offset": offset, "updated_at": clock.iso_seconds()}
        )


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


class BotLease:
    """``LOOPKIT_HOME/locks/telegram-<bot-id>.lock``: only its holder polls the bot.

    Telegram allows one ``getUpdates`` consumer per bot. :meth:`take` blocks in ``flock``
    until this process holds the lease; the kernel hands it over the moment the holder
    exits or dies, with no polling of the lock. :meth:`release` hands it on: a stopped
    poller must not keep it, since a flock is held by its open file, and a poller made anew
    in this process (a SIGHUP reload) would wait for it forever — and every other process
    with it.
    """

    def __init__(self, bot: str, root: Path | None = None) -> None:
        self.path = (root or home()) / "locks" / f"telegram-{bot}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def take(self) -> None:
        """Block until held (or go on without a lease when none can be made: polling beats
        silence)."""
        try:
            self.path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.warning("telegram_lease_failed", msg=f"telegram: no lease ({exc.strerror}); "
                        "polling without one")  # fmt: skip
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None
