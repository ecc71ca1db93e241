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


# Names of flags, keys and headers whose value is a secret: --token X, api_key=X,
# "Authorization: Bearer X". Not the names of a secret's kind or place (--auth-type basic).
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:token|key|apikey|secret|pass|passwd|password|pw|pwd|auth|authorization"
    r"|bearer|cred|creds|credentials|sig|signature|session|cookie)(?:$|[-_])",
    re.I,
)
_NOT_SECRET_NAME = re.compile(r"[-_](?:type|method|mode|scheme|file|path|header|id|name)$", re.I)
# A user flag's value is ``user:password``: only the password is secret.
_USER_NAME = re.compile(r"^(?:u|user)$", re.I)
_HEADER = re.compile(r"^([A-Za-z0-9_-]+):\s*(\S.*)$", re.S)
# A word that looks like a credential: long, letters and digits mixed, not a path.
_TOKEN_LIKE = re.compile(r"(?=[^/\s]*\d)(?=[^/\s]*[A-Za-z])[A-Za-z0-9_\-.+=:~]{16,}")
# A URL path segment that looks like a topic or a key rather than a word (``my-topic-42``).
_KEYISH = re.compile(r"(?=.{6,})[^/]*[\d_-][^/]*")


def _secret_name(name: str) -> bool:
    name = name.lstrip("-")
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET_NAME.search(name)


def _password_of(value: str) -> list[str]:
    return [value.partition(":")[2]] if ":" in value else []


def _pairs(text: str, urls: bool = True) -> list[str]:
    """``a=1&token=X`` (a form body, a query, ``--token=X``, ``API_KEY=X``): the secrets."""
    found: list[str] = []
    for pair in text.split("&"):
        name, eq, value = pair.partition("=")
        if not (eq and name and value):
            continue
        if _USER_NAME.match(name.lstrip("-")):
            found += _password_of(value)  # --user=ops:pw
        elif _secret_name(name):
            found.append(value)
        else:
            found += _word_secrets(value, urls)[0]  # --header=…, --url=https://…
    return found


def _url_secrets(url: str, whole: bool = True) -> list[str]:
    """A URL whole, without its scheme, its password, key-like path segments, secret values.

    ``whole=False``: only the password and the secret query values (a command shown to the
    human who approves it keeps its host and path readable)."""
    bare = url.split("://", 1)[1]
    found = [url, bare] if whole else []
    authority, _, rest = bare.partition("/")
    if "@" in authority:
        found += _password_of(authority.rpartition("@")[0])
    path, _, query = rest.partition("?")
    if whole:
        found += [segment for segment in path.split("/") if _KEYISH.fullmatch(segment)]
    return found + _pairs(query, whole)


def _word_secrets(word: str, urls: bool = True) -> tuple[list[str], str | None]:
    """The secrets in one argument, and what the next argument is (``"secret"``, ``"user"``)."""
    header = _HEADER.match(word)
    if header and _secret_name(header[1]):  # "Authorization: Bearer X", "Cookie: s=X"
        value = header[2].strip()
        return [value, *value.split()[1:], *_pairs(value.replace("; ", "&"), urls)], None
    if word.startswith("-") and "=" in word:
        return _pairs(word, urls), None  # --token=X, --header='Authorization: Bearer X'
    if any(c.isspace() for c in word):
        return _argv_secrets(_split(word), urls), None  # sh -c '… --token X'
    scheme = word.split("://", 1)[0] if "://" in word else None
    if scheme is not None and scheme.isalnum():
        return _url_secrets(word, urls), None
    if "=" in word:
        return _pairs(word, urls), None
    if word.startswith("-"):
        flag = word.lstrip("-")
        if _USER_NAME.match(flag):
            return [], "user"  # -u ops:pw
        return [], "secret" if _secret_name(flag) else None  # --token X
    return ([word] if _TOKEN_LIKE.fullmatch(word) else []), None


def dial_secrets(command: str) -> list[str]:
    """The parts of an operator's dial command that are secrets (SPEC: its own arguments
    marked secret), besides the whole command line.

    An argument is taken as secret by its shape, never because it is merely long — masking
    ``python3`` or ``loopkit`` would garble every log line: a URL (whole, its password, its
    key-like path segments and secret query values), the value of a flag, key or header
    named like a secret (``--token X``, ``--api-key=X``, ``API_KEY=X``, ``token=X`` in a form
    body, ``"Authorization: Bearer X"``), a user flag's password (``-u user:pw``), and a
    credential-shaped word (16+ letters and digits mixed, not a path).
    """
    return _argv_secrets(_split(command), urls=True)


def mask_command(argv: list[str]) -> list[str]:
    """``argv`` as shown to the human asked to approve it: the same secret shapes masked,
    URLs kept readable but for their password (``postgres://app:***@db/prod``)."""
    secrets = sorted(set(_argv_secrets(argv, urls=False)), key=len, reverse=True)
    shown = []
    for word in argv:
        for secret in secrets:
            word = word.replace(secret, MASK)
        shown.append(word)
    return shown


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _argv_secrets(words: list[str], urls: bool) -> list[str]:
    found: list[str] = []
    expect: str | None = None
    for word in words:
        if expect is not None and not word.startswith("-"):
            found += [word] if expect == "secret" else _password_of(word)
            expect = None
            continue
        secrets, expect = _word_secrets(word, urls)
        found += secrets
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
