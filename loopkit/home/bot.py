"""One bot on one machine: its lease (only the holder polls Telegram), its update offset and
the updates it has handled, in ``LOOPKIT_HOME`` (SPEC sections 10 and 16). A fleet keeps them
in its database instead (:mod:`loopkit.fleet.pg`), falling back to these when the database is
gone."""

from __future__ import annotations

import contextlib
import fcntl
import os
from datetime import timedelta

from loopkit import atomicfile, clock, readfile
from loopkit.datarecord import record
from loopkit.home import home
from loopkit.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from datetime import datetime
    from pathlib import Path
    from typing import Any

log = get_logger("loopkit.phone")

KEEP_HANDLED = timedelta(days=8)  # a handled update is remembered this long (SPEC §16)
MAX_HANDLED = 1000  # and at most this many, newest first: the file stays small


def bot_id(token: str | None) -> str:
    """The bot's public user id (the token's part before the colon): not a secret."""
    return (token or "").split(":", 1)[0] or "unknown"


@record(frozen=True, slots=True)
class Position:
    """Where a bot's updates stand: the next offset to ask for, and when the last update was
    seen (None: not known). The offset confirms the updates below it; ``seen_at`` says
    whether it still can — after a week without updates Telegram restarts its ids at a
    random value, and an offset above them would swallow every one (SPEC §16)."""

    offset: int
    seen_at: datetime | None


def _when(value: Any) -> datetime | None:
    try:
        return clock.parse_iso(value) if isinstance(value, str) else None
    except ValueError:
        return None


class OffsetFile:
    """``LOOPKIT_HOME/telegram/<bot-id>.json``: the next update offset, when the last update
    was seen, and the updates handled in the last :data:`KEEP_HANDLED` (at most
    :data:`MAX_HANDLED`) — one file per bot on the machine, whichever process polls it,
    written atomically by the lease's holder. No token is written."""

    def __init__(self, token: str | None, root: Path | None = None) -> None:
        self.bot = bot_id(token)
        self.path = (root or home()) / "telegram" / f"{self.bot}.json"

    def _read(self) -> dict[str, Any]:
        try:
            data = readfile.json_document(readfile.read_text(self.path))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("bot") == self.bot else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomicfile.write_json(
            self.path, {**data, "bot": self.bot, "updated_at": clock.iso_seconds()}
        )

    def load(self) -> Position | None:
        data = self._read()
        offset = data.get("offset")
        if not isinstance(offset, int) or isinstance(offset, bool):
            return None
        # A file written before seen_at was kept was saved only when updates came: its
        # updated_at is when the last one was seen.
        return Position(offset, _when(data.get("seen_at", data.get("updated_at"))))

    def save(self, position: Position) -> None:
        seen = clock.iso_millis(position.seen_at) if position.seen_at else None
        self._write({**self._read(), "offset": position.offset, "seen_at": seen})

    def _handled(self, data: dict[str, Any]) -> dict[str, datetime]:
        found = data.get("handled")
        kept = {}
        for key, at in found.items() if isinstance(found, dict) else ():
            when = _when(at)
            if isinstance(key, str) and when is not None:
                kept[key] = when
        return kept

    def handled(self, keys: Collection[str]) -> set[str]:
        """Which of these updates (:func:`loopkit.inbox.relay.poller.update_key`) were
        handled already."""
        return set(keys) & self._handled(self._read()).keys()

    def mark(self, key: str, at: datetime) -> None:
        """Remember one more handled update; forget those older than :data:`KEEP_HANDLED`
        before ``at``, and all but the newest :data:`MAX_HANDLED`."""
        data = self._read()
        handled = self._handled(data)
        handled[key] = at
        newest = sorted(handled.items(), key=lambda item: item[1], reverse=True)
        kept = [(k, when) for k, when in newest if when > at - KEEP_HANDLED][:MAX_HANDLED]
        self._write({**data, "handled": {k: clock.iso_millis(when) for k, when in kept}})


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
