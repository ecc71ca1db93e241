"""One-tap answer URLs (SPEC section 29): a button on a phone's push answers without a
session cookie, because the URL itself is the permission.

A tap names the workspace, the request, the choice (its index), the person it was sent to
and when it expires; the URL carries those and an HMAC-SHA256 of them under a key derived
from the inbox token (``LOOPKIT_HOME/inbox.token``) — never the token itself. So:

- a URL with any part changed, or made with another machine's token, does not verify
  (the inbox answers 403); ``serve --rotate-token`` voids every URL sent before;
- it expires with its request: at the request's deadline when the request ends then
  (``abort``, ``skip``, ``retry``), else :data:`LIFE` after it was asked (410);
- it is single use: the first tap that answers marks it spent in ``LOOPKIT_HOME/taps/``
  (one file created exclusively, so two processes cannot both spend it); a second tap is
  refused (409), as is a tap on a request answered another way.

The sender of the push (``loopkit run``, ``escalate``) and the inbox (``loopkit serve``)
share the key through the home they share: the URL must reach the inbox of the machine
that sent it.
"""

from __future__ import annotations

import contextlib
import os
from urllib.parse import quote, urlencode

from loopkit import atomicfile, clock, readfile
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path
    from typing import Any

TOKEN_FILE = "inbox.token"  # the web inbox's token (loopkit.inbox.auth), 0600
SPENT = "taps"  # LOOPKIT_HOME/taps/<expires>-<signature>: a tap used once
LIFE = 7 * 86400  # seconds a tap lives when its request has no deadline that ends it
ENDING_ACTIONS = ("abort", "skip", "retry")  # a deadline with these closes the request
SIGNATURE_HEX = 32


@record(frozen=True, slots=True)
class Tap:
    """One button: choice ``index`` of ``request_id`` in workspace ``workspace`` (its id),
    sent to ``person`` ("" when the ladder is not of people), valid until ``expires`` (Unix
    seconds)."""

    workspace: str
    request_id: str
    index: int
    person: str
    expires: int

    @property
    def path(self) -> str:
        return f"/t/{self.workspace}/{quote(self.request_id, safe='')}/{self.index}"


def secret(root: Path) -> str:
    """The inbox token of the home at ``root`` (made, 0600, when there is none yet: a push
    may go out before ``loopkit serve`` first ran)."""
    path = root / TOKEN_FILE
    if not path.exists():
        import secrets  # only to make a token (secrets imports hmac, hashlib: OpenSSL)

        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        # serve may make it meanwhile: then theirs stands (create_text never overwrites)
        atomicfile.create_text(path, secrets.token_urlsafe(32) + "\n", mode=0o600)
    return readfile.read_text(path).strip()


def expires(asked_at: str, timeout: dict[str, Any] | None) -> int:
    """When a tap on a request asked at ``asked_at`` with ``timeout`` (its
    ``timeout_default``) stops working: at its deadline when that ends the request, else
    :data:`LIFE` after it was asked."""
    try:
        start = clock.parse_iso(asked_at).timestamp()
    except ValueError:
        start = clock.now().timestamp()
    timeout = timeout or {}
    minutes = timeout.get("after_minutes")
    action = timeout.get("action")
    if action in ENDING_ACTIONS and isinstance(minutes, int | float) and minutes > 0:
        return int(start + min(float(minutes) * 60, LIFE * 52))
    return int(start + LIFE)


def signature(key: str, tap: Tap) -> str:
    import hashlib  # only where a tap is signed or checked (hashlib loads OpenSSL)
    import hmac

    message = "\0".join(
        ("loopkit-tap-v1", tap.workspace, tap.request_id, str(tap.index), tap.person,
         str(tap.expires))
    )  # fmt: skip
    mac = hmac.new(f"tap:{key}".encode(), message.encode(), hashlib.sha256)
    return mac.hexdigest()[:SIGNATURE_HEX]


def url(base: str, key: str, tap: Tap) -> str:
    """The tap's URL under the inbox's address ``base``: no token, no cookie needed."""
    query = urlencode({"p": tap.person, "e": tap.expires, "s": signature(key, tap)})
    return f"{base.rstrip('/')}{tap.path}?{query}"


def verifies(key: str, tap: Tap, given: str) -> bool:
    """Whether ``given`` is the tap's signature under ``key`` (compared in constant time)."""
    import hmac

    if not key or len(given) != SIGNATURE_HEX:
        return False
    return hmac.compare_digest(signature(key, tap), given)


def expired(tap: Tap, now: datetime | None = None) -> bool:
    return (now or clock.now()).timestamp() >= tap.expires


def _mark(root: Path, tap: Tap, given: str) -> Path:
    return root / SPENT / f"{tap.expires}-{given[:SIGNATURE_HEX]}"


def spent(root: Path, tap: Tap, given: str) -> bool:
    """Whether this tap was used already."""
    return _mark(root, tap, given).exists()


def spend(root: Path, tap: Tap, given: str) -> bool:
    """Mark the tap used; False when it was already (another process was first). Marks of
    taps that expired are cleared on the way."""
    folder = root / SPENT
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = int(clock.now().timestamp())
    for old in folder.iterdir():
        stamp = old.name.partition("-")[0]
        if stamp.isdigit() and int(stamp) < now:
            with contextlib.suppress(OSError):
                os.unlink(old)
    return atomicfile.create_text(_mark(root, tap, given), f"{clock.iso_seconds()}\n", mode=0o600)
