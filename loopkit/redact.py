"""Secret redaction: the one place that decides what a secret looks like.

Every log line (ours and httpx's), every error message and every recorded delivery error
passes through :meth:`Redactor.text`. Known secret values (from the environment) are
replaced exactly; shapes that are secret wherever they appear (a Bot API token, a Slack
webhook path) are replaced by pattern too, so a token from some other source is caught.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

MASK = "***"

_PATTERNS = (
    # Telegram bot token, as it appears in a Bot API URL path or alone: 123456:AAE...
    re.compile(r"(?<![A-Za-z0-9])\d{4,}:[A-Za-z0-9_-]{20,}"),
    # Slack incoming-webhook path.
    re.compile(r"hooks\.slack(?:-gov)?\.com/services/[^\s\"'<>]+"),
)


# Names of flags, keys and headers whose value is a secret: --token X, api_key=X, -u user:pw,
# "Authorization: Bearer X".
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:token|key|apikey|secret|pass|passwd|password|auth|authorization|bearer"
    r"|cred|creds|credentials|sig|signature|session|cookie)(?:$|[-_])|^u$|^user$",
    re.I,
)
# A word that looks like a credential: long, letters and digits mixed, not a path.
_TOKEN_LIKE = re.compile(r"(?=[^/\s]*\d)(?=[^/\s]*[A-Za-z])[A-Za-z0-9_\-.+=:~]{16,}")


def dial_secrets(command: str) -> list[str]:
    """The parts of an operator's dial command that are secrets (SPEC: its own arguments
    marked secret), besides the whole command line.

    An argument is taken as secret by its shape, never because it is merely long — masking
    ``python3`` or ``loopkit`` would garble every log line: a URL (its path and query carry
    topics and keys), the value of a flag, key or header named like a secret (``--token X``,
    ``--api-key=X``, ``API_KEY=X``, ``-u user:pw``, ``"Authorization: Bearer X"``), and a
    credential-shaped word (16+ letters and digits mixed, not a path).
    """
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: list[str] = []
    after_secret_flag = False
    for word in words:
        if after_secret_flag and not word.startswith("-"):
            found.extend((word, word.partition(":")[2]))  # -u user:password, the password too
        after_secret_flag = False
        name, eq, value = word.partition("=")
        header, colon, header_value = word.partition(":")
        if "://" in word:
            found.append(word)
            rest = word.split("://", 1)[1].partition("/")[2]
            if len(rest) >= 6:
                found.append(rest)
        elif eq and _SECRET_NAME.search(name):
            found.append(value)
        elif colon and " " in header_value and _SECRET_NAME.search(header):
            found.append(header_value.strip())
            found.extend(header_value.split()[1:])  # "Bearer X" and X alone
        elif word.startswith("-") and _SECRET_NAME.search(word.lstrip("-")):
            after_secret_flag = True
        elif _TOKEN_LIKE.fullmatch(word):
            found.append(word)
    return [f for f in found if len(f) >= 4]


class Redactor:
    """Masks secrets in strings and (recursively) in JSON-like structures."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a secret containing another is masked whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def add(self, *secrets: str) -> None:
        self._secrets = sorted(
            {*self._secrets, *(s for s in secrets if s and len(s) >= 4)}, key=len, reverse=True
        )

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        for pattern in _PATTERNS:
            value = pattern.sub(MASK, value)
        return value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        if isinstance(value, BaseException):
            return self.text(str(value))
        return value
