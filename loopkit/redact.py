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
    re.compile(r"(?<=/bot)\d{4,}:[A-Za-z0-9_-]{20,}"),  # ... and in a Bot API URL
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


def _credential_of(value: str) -> str | None:
    """Of ``user:password``, the secret part: the password — or all of it when the user is
    the credential (``sk_test_…:`` with an empty password, a token-shaped user). None when
    there is no password part. The one rule for logs and for what gate shows."""
    if ":" not in value:
        return None
    user, _, password = value.partition(":")
    return value if not password or _TOKEN_LIKE.fullmatch(user) else password


def _password_of(value: str) -> list[str]:
    """The secrets of ``user:password`` to mask in logs (the whole, and its parts alone)."""
    secret = _credential_of(value)
    if secret is None:
        return []
    user, _, password = value.partition(":")
    return [password] if secret == password else [p for p in (password, user, value) if p]


def _pairs(text: str) -> list[str]:
    """``a=1&token=X`` (a form body, a query, ``API_KEY=X``): the secrets."""
    return [found for pair in text.split("&") for found in _pair(pair)]


def _pair(pair: str) -> list[str]:
    """One ``name=value`` (``--token=X``, ``--user=ops:pw``, ``--header=…``): the secrets."""
    name, eq, value = pair.partition("=")
    if not (eq and name and value):
        return []
    if _USER_NAME.match(name.lstrip("-")):
        return _password_of(value)
    if _secret_name(name):
        return [value]
    return _word_secrets(value)[0]  # --header=…, --url=https://…


def _url_secrets(url: str) -> list[str]:
    """A URL whole, without its scheme, its password, key-like path segments, secret values."""
    bare = url.split("://", 1)[1]
    found = [url, bare]
    authority, _, rest = bare.partition("/")
    if "@" in authority:
        found += _password_of(authority.rpartition("@")[0])
    path, _, query = rest.partition("?")
    found += [segment for segment in path.split("/") if _KEYISH.fullmatch(segment)]
    return found + _pairs(query)


def _word_secrets(word: str) -> tuple[list[str], str | None]:
    """The secrets in one argument, and what the next argument is (``"secret"``, ``"user"``)."""
    header = _HEADER.match(word)
    if header and _secret_name(header[1]):  # "Authorization: Bearer X", "Cookie: s=X"
        value = header[2].strip()
        return [value, *value.split()[1:], *_pairs(value.replace("; ", "&"))], None
    if word.startswith("-") and "=" in word:
        return _pair(word), None  # --token=X, --header='Authorization: Bearer X'
    if any(c.isspace() for c in word):
        return _argv_secrets(_split(word)), None  # sh -c '… --token X'
    if _is_url(word):
        return _url_secrets(word), None
    if "=" in word:
        return _pairs(word), None
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
    return _argv_secrets(_split(command))


def _is_url(word: str) -> bool:
    return "://" in word and word.split("://", 1)[0].isalnum()


def mask_command(argv: list[str]) -> list[str]:
    """``argv`` as shown to the human asked to approve it: secrets masked where they sit —
    a URL's password and secret query values (``postgres://app:***@db/prod``), the value of
    a flag, key or header named like a secret, a user flag's password, the token and webhook
    shapes — and nothing else, so the human sees what they approve. No guessing by shape:
    ``git checkout 3f9a1c0b…`` stays readable."""
    shown: list[str] = []
    expect: str | None = None
    for word in argv:
        if expect is not None and not word.startswith("-"):
            shown.append(MASK if expect == "secret" else _mask_user(word))
            expect = None
            continue
        masked, expect = _mask_word(word)
        shown.append(masked)
    return [_mask_shapes(word) for word in shown]


def _mask_shapes(word: str) -> str:
    for pattern in _PATTERNS:
        word = pattern.sub(MASK, word)
    return word


def _mask_user(value: str) -> str:
    secret = _credential_of(value)
    if secret is None:
        return value
    return MASK if secret == value else f"{value.partition(':')[0]}:{MASK}"


def _mask_value(name: str, value: str) -> str:
    if _USER_NAME.match(name.lstrip("-")):
        return _mask_user(value)
    if _secret_name(name):
        return MASK
    return _mask_word(value)[0]


def _mask_word(word: str) -> tuple[str, str | None]:
    header = _HEADER.match(word)
    if header and _secret_name(header[1]):
        return f"{header[1]}: {MASK}", None
    if word.startswith("-") and "=" in word:
        name, _, value = word.partition("=")
        return f"{name}={_mask_value(name, value)}", None
    if any(c.isspace() for c in word):
        # A script (sh -c '…'): its words masked the same way, in place.
        inner = _split(word)
        changed = {w: m for w, m in zip(inner, mask_command(inner), strict=True) if w != m}
        for original in sorted(changed, key=len, reverse=True):
            word = word.replace(original, changed[original])
        return word, None
    if _is_url(word):
        scheme, _, rest = word.partition("://")
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            userinfo, _, host = authority.rpartition("@")
            authority = f"{_mask_user(userinfo)}@{host}"
        path, question, query = path.partition("?")
        if question:
            query = "&".join(_mask_pair(pair) for pair in query.split("&"))
        return f"{scheme}://{authority}{slash}{path}{question}{query}", None
    if "=" in word and not word.startswith("-"):
        return "&".join(_mask_pair(pair) for pair in word.split("&")), None
    if word.startswith("-"):
        flag = word.lstrip("-")
        if _USER_NAME.match(flag):
            return word, "user"
        return word, "secret" if _secret_name(flag) else None
    return word, None


def _mask_pair(pair: str) -> str:
    name, eq, value = pair.partition("=")
    return f"{name}={_mask_value(name, value)}" if eq and name and value else pair


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _argv_secrets(words: list[str]) -> list[str]:
    found: list[str] = []
    expect: str | None = None
    for word in words:
        if expect is not None and not word.startswith("-"):
            found += [word] if expect == "secret" else _password_of(word)
            expect = None
            continue
        secrets, expect = _word_secrets(word)
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
