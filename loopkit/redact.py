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
# "Authorization: Bearer X". Not the names of a secret's kind or place (--auth-type basic).
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:token|key|apikey|secret|pass|passwd|password|auth|authorization|bearer"
    r"|cred|creds|credentials|sig|signature|session|cookie)(?:$|[-_])|^u$|^user$",
    re.I,
)
_NOT_SECRET_NAME = re.compile(r"[-_](?:type|method|mode|scheme|file|path|header)$", re.I)
# A word that looks like a credential: long, letters and digits mixed, not a path.
_TOKEN_LIKE = re.compile(r"(?=[^/\s]*\d)(?=[^/\s]*[A-Za-z])[A-Za-z0-9_\-.+=:~]{16,}")
# A URL's path segment or query value that looks like a topic or key rather than a word:
# it holds a digit, a dash or an underscore (``my-secret-topic``), or it is long.
_KEYISH = re.compile(r"(?=.{6,})(?:.*[\d_-].*|.{12,})")


def _secret_name(name: str) -> bool:
    name = name.lstrip("-")
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


def _url_secrets(url: str) -> list[str]:
    """A URL whole, without its scheme, and its key-like path segments and query values."""
    bare = url.split("://", 1)[1]
    found = [url, bare]
    path, _, query = bare.partition("/")[2].partition("?")
    found += [segment for segment in path.split("/") if _KEYISH.fullmatch(segment)]
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if value and (_secret_name(name) or _KEYISH.fullmatch(value)):
            found.append(value)
    return found


def _word_secrets(word: str) -> tuple[list[str], bool]:
    """The secrets in one argument, and whether the next argument is a secret too."""
    if "://" in word and "=" not in word.split("://", 1)[0]:
        return _url_secrets(word), False
    name, eq, value = word.partition("=")
    if eq and name:
        if _secret_name(name):  # --token=X, API_KEY=X, --user=ops:pw
            return [value, value.partition(":")[2]], False
        return _word_secrets(value)[0], False  # --header=… , --url=https://…
    header, colon, header_value = word.partition(":")
    if colon and header_value.startswith(" ") and _secret_name(header):
        return [header_value.strip(), *header_value.split()[1:]], False  # "Bearer X", X
    if word.startswith("-"):
        return [], _secret_name(word)  # --token X, -u ops:pw
    return ([word] if _TOKEN_LIKE.fullmatch(word) else []), False


def dial_secrets(command: str) -> list[str]:
    """The parts of an operator's dial command that are secrets (SPEC: its own arguments
    marked secret), besides the whole command line.

    An argument is taken as secret by its shape, never because it is merely long — masking
    ``python3`` or ``loopkit`` would garble every log line: a URL (whole, and its key-like
    path segments and query values), the value of a flag, key or header named like a secret
    (``--token X``, ``--api-key=X``, ``API_KEY=X``, ``-u user:pw``, ``"Authorization: Bearer
    X"``), and a credential-shaped word (16+ letters and digits mixed, not a path).
    """
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found: list[str] = []
    next_is_secret = False
    for word in words:
        if next_is_secret and not word.startswith("-"):
            found.extend((word, word.partition(":")[2]))  # -u user:password, the password too
            next_is_secret = False
            continue
        secrets, next_is_secret = _word_secrets(word)
        found.extend(secrets)
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
