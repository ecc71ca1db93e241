"""Who may open the inbox: the token, the sessions it grants, CSRF, and a brake on guessing.

The token (256 random bits, URL-safe) lives in ``LOOPKIT_HOME/inbox.token`` (0600), made on
the first ``serve``. Visiting the inbox with ``?token=…`` exchanges it for a session cookie
and a redirect to the same page without it, so the token does not stay in the address bar,
the history or a screenshot. Sessions and CSRF tokens are not stored anywhere: each is an
HMAC of a random nonce under the inbox token, so ``serve --rotate-token`` (a new token)
invalidates every session at once, and a restart keeps them valid.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import time
from collections import deque

from loopkit import atomicfile, readfile
from loopkit.errors import WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

COOKIE = "loopkit_session"
TOKEN_FILE = "inbox.token"
SESSION_DAYS = 30


class InboxToken:
    """``LOOPKIT_HOME/inbox.token``, read again whenever the file changes (a rotation)."""

    def __init__(self, home: Path) -> None:
        self.path = home / TOKEN_FILE
        self._seen: tuple[int, int] | None = None
        self._value = ""
        self._lock = threading.Lock()

    def ensure(self) -> str:
        """The token, made (0600) if there is none yet."""
        if not self.path.exists():
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.create_text(self.path, secrets.token_urlsafe(32) + "\n", mode=0o600)
        return self.value()

    def rotate(self) -> str:
        """A new token: every session made with the old one stops working."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            atomicfile.write_text(self.path, secrets.token_urlsafe(32) + "\n", mode=0o600)
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, self.path)) from None
        return self.value()

    def value(self) -> str:
        with self._lock:
            try:
                info = os.stat(self.path)
            except OSError:
                return ""
            seen = (info.st_ino, info.st_mtime_ns)
            if seen != self._seen:
                try:
                    self._value = readfile.read_text(self.path).strip()
                except (OSError, UnicodeDecodeError):
                    self._value = ""
                self._seen = seen
            return self._value if len(self._value) >= 22 else ""  # ≥ 128 bits, or none


def _sign(key: str, purpose: str, nonce: str) -> str:
    mac = hmac.new(key.encode(), f"{purpose}:{nonce}".encode(), hashlib.sha256)
    return mac.hexdigest()[:32]


class Sessions:
    """Session cookies and CSRF tokens derived from the inbox token."""

    def __init__(self, token: InboxToken) -> None:
        self.token = token

    def token_matches(self, given: str) -> bool:
        key = self.token.value()
        return bool(key) and hmac.compare_digest(given.encode(), key.encode())

    def new_session(self) -> str:
        nonce = f"{int(time.time())}.{secrets.token_urlsafe(12)}"
        return f"{nonce}.{_sign(self.token.value(), 'session', nonce)}"

    def valid_session(self, cookie: str | None) -> str | None:
        """The session's nonce when ``cookie`` is a live session, else None."""
        key = self.token.value()
        if not cookie or not key or cookie.count(".") != 2:
            return None
        nonce, _, mac = cookie.rpartition(".")
        made = nonce.split(".", 1)[0]
        if not made.isdigit() or time.time() - int(made) > SESSION_DAYS * 86400:
            return None
        if not hmac.compare_digest(mac, _sign(key, "session", nonce)):
            return None
        return nonce

    def csrf(self, session_nonce: str) -> str:
        return _sign(self.token.value(), "csrf", session_nonce)

    def csrf_matches(self, session_nonce: str, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given, self.csrf(session_nonce))


class Throttle:
    """Wrong tokens from one address: after ``limit`` in ``window`` seconds, its wrong tokens
    are refused (429) for ``window`` seconds, unlogged — a brake on guessing that locks out
    the presenter of the wrong tokens, never the token (SPEC §28): the right token is let in
    whoever presents it, so a stranger's guesses cannot lock the human's own link out (the
    token is 256 random bits: the brake is against noise, not against a lucky guess)."""

    def __init__(self, limit: int = 5, window: float = 60.0) -> None:
        self.limit = limit
        self.window = window
        self._misses: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float]:
        misses = self._misses.setdefault(client, deque())
        while misses and now - misses[0] > self.window:
            misses.popleft()
        return misses

    def blocked(self, client: str) -> bool:
        with self._lock:
            return len(self._recent(client, time.monotonic())) >= self.limit

    def miss(self, client: str) -> bool:
        """Count a wrong token from ``client``; whether it is locked out (it was already)."""
        with self._lock:
            now = time.monotonic()
            recent = self._recent(client, now)
            locked = len(recent) >= self.limit
            recent.append(now)
            while len(recent) > self.limit:  # a lockout's misses: the window's last ones
                recent.popleft()
            if len(self._misses) > 10_000:  # a flood of addresses: forget the oldest
                self._misses.pop(next(iter(self._misses)))
            return locked
