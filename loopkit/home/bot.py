"""One bot on one machine: its lease (only the holder polls Telegram) and its update offset,
in ``LOOPKIT_HOME`` (SPEC section 10). A fleet keeps both in its database instead
(:mod:`loopkit.fleet.pg`), falling back to these when the database is gone."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from loopkit import atomicfile, clock, readfile
from loopkit.home import home
from loopkit.log import get_logger

log = get_logger("loopkit.phone")


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
