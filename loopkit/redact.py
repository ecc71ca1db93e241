"""Secret redaction: the one place that decides what a secret looks like.

Every log line (ours and httpx's), every error message and every recorded delivery error
passes through :meth:`Redactor.text`. Known secret values (from the environment) are
replaced exactly; shapes that are secret wherever they appear (a Bot API token, a Slack
webhook path) are replaced by pattern too, so a token from some other source is caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "***"

_PATTERNS = (
    # Telegram bot token, as it appears in a Bot API URL path or alone: 123456:AAE...
    re.compile(r"(?<![A-Za-z0-9])\d{4,}:[A-Za-z0-9_-]{20,}"),
    # Slack incoming-webhook path.
    re.compile(r"hooks\.slack(?:-gov)?\.com/services/[^\s\"'<>]+"),
)


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
