"""Secret redaction: the one place that decides what a secret looks like.

Every log line (ours and httpx's), every error message and every recorded delivery error
passes through :meth:`Redactor.text`. Known secret values (from the environment) are
replaced exactly; shapes that are secret wherever they appear (a Bot API token, a Slack
webhook path) are replaced by pattern too, so a token from some other source is caught.
"""

from __future__ import annotations

import re
import shlex

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Literal

MASK = "***"

# The regular expressions here are compiled on first use, by ``re``'s own cache: compiling
# them all at import was ~0.3 ms each of every command's start-up (SPEC §20).
_PATTERNS = (
    # Telegram bot token, as it appears in a Bot API URL path or alone: 123456:AAE...
    r"(?<![A-Za-z0-9])\d{4,}:[A-Za-z0-9_-]{20,}",
    r"(?<=/bot)\d{4,}:[A-Za-z0-9_-]{20,}",  # ... and in a Bot API URL
    # Slack incoming-webhook path.
    r"hooks\.slack(?:-gov)?\.com/services/[^\s\"'<>]+",
)


# Names of flags, keys and headers whose value is a secret: --token X, api_key=X,
# "Authorization: Bearer X". Not the names of a secret's kind or place (--auth-type basic).
_SECRET_NAME = (
    r"(?i)(?:^|[-_])(?:token|key|apikey|secret|pass|passwd|password|pw|pwd|auth|authorization"
    r"|bearer|cred|creds|credentials|sig|signature|session|cookie)(?:$|[-_])"
)
_NOT_SECRET_NAME = r"(?i)[-_](?:type|method|mode|scheme|file|path|header|id|name)$"
# A user flag's value is ``user:password``: only the password is secret.
_USER_NAME = r"(?i)^(?:u|user)$"
_HEADER = r"(?s)^([A-Za-z0-9_-]+):\s*(\S.*)$"
# A word that looks like a credential: long, letters and digits mixed, not a path.
_TOKEN_LIKE = r"(?=[^/\s]*\d)(?=[^/\s]*[A-Za-z])[A-Za-z0-9_\-.+=:~]{16,}"
# A URL path segment that looks like a topic or a key rather than a word (``my-topic-42``).
_KEYISH = r"(?=.{6,})[^/]*[\d_-][^/]*"


def _secret_name(name: str) -> bool:
    name = name.lstrip("-")
    return bool(re.search(_SECRET_NAME, name)) and not re.search(_NOT_SECRET_NAME, name)


def _credential_of(value: str) -> str | None:
    """Of ``user:password``, the secret part: the password — or all of it when the user is
    the credential (``sk_test_…:`` with an empty password, a token-shaped user). None when
    there is no password part. The one rule for logs and for what gate shows."""
    if ":" not in value:
        return None
    user, _, password = value.partition(":")
    return value if not password or re.fullmatch(_TOKEN_LIKE, user) else password


def _password_of(value: str) -> list[str]:
    """The secrets of ``user:password`` to mask in logs (the whole, and its parts alone)."""
    secret = _credential_of(value)
    if secret is None:
        return []
    user, _, password = value.partition(":")
    return [password] if secret == password else [p for p in (password, user, value) if p]


def _mask_user(value: str) -> str:
    secret = _credential_of(value)
    if secret is None:
        return value
    return MASK if secret == value else f"{value.partition(':')[0]}:{MASK}"


@record(frozen=True, slots=True)
class _Word:
    """One argument as the walker saw it: ``shown`` to a human approving it (secrets masked
    where they sit), ``secrets`` to mask in logs (whole URLs, credential-shaped words too)."""

    shown: str
    secrets: tuple[str, ...] = ()


if TYPE_CHECKING:
    Expect = Literal["secret", "user"] | None


def _walk(words: list[str]) -> list[_Word]:
    """The one secret walker: each argument, and what the next one is (``--token X``)."""
    seen: list[_Word] = []
    expect: Expect = None
    for word in words:
        if expect is not None and not word.startswith("-"):
            if expect == "secret":
                seen.append(_Word(MASK, (word,)))
            else:
                seen.append(_Word(_mask_user(word), tuple(_password_of(word))))
            expect = None
            continue
        found, expect = _one(word)
        seen.append(found)
    return seen


def _one(word: str) -> tuple[_Word, Expect]:
    header = re.match(_HEADER, word)
    if header and _secret_name(header[1]):  # "Authorization: Bearer X", "Cookie: s=X"
        value = header[2].strip()
        secrets = [value, *value.split()[1:]]
        secrets += [s for pair in value.replace("; ", "&").split("&") for s in _pair(pair).secrets]
        return _Word(f"{header[1]}: {MASK}", tuple(secrets)), None
    if word.startswith("-") and "=" in word:
        return _pair(word), None  # --token=X, --header='Authorization: Bearer X'
    if any(c.isspace() for c in word):
        return _script(word), None  # sh -c '… --token X'
    if _is_url(word):
        return _url(word), None
    if "=" in word:
        return _pairs(word), None  # a form body, a query, API_KEY=X
    if word.startswith("-"):
        flag = word.lstrip("-")
        if re.match(_USER_NAME, flag):
            return _Word(word), "user"  # -u ops:pw
        return _Word(word), "secret" if _secret_name(flag) else None  # --token X
    return _Word(word, (word,) if re.fullmatch(_TOKEN_LIKE, word) else ()), None


def _pair(pair: str) -> _Word:
    """One ``name=value`` (``--token=X``, ``--user=ops:pw``, ``--header=…``, ``a=1``)."""
    name, eq, value = pair.partition("=")
    if not (eq and name and value):
        return _Word(pair)
    if re.match(_USER_NAME, name.lstrip("-")):
        return _Word(f"{name}={_mask_user(value)}", tuple(_password_of(value)))
    if _secret_name(name):
        return _Word(f"{name}={MASK}", (value,))
    inner, _ = _one(value)  # --header=…, --url=https://…
    return _Word(f"{name}={inner.shown}", inner.secrets)


def _pairs(text: str) -> _Word:
    """``a=1&token=X``: each pair on its own."""
    found = [_pair(pair) for pair in text.split("&")]
    return _Word("&".join(w.shown for w in found), tuple(s for w in found for s in w.secrets))


def _url(url: str) -> _Word:
    """Shown: the password and secret query values masked. Logs: the URL whole (with and
    without its scheme), its password, key-like path segments, secret query values."""
    scheme, _, bare = url.partition("://")
    authority, slash, rest = bare.partition("/")
    secrets = [url, bare]
    shown_authority = authority
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        secrets += _password_of(userinfo)
        shown_authority = f"{_mask_user(userinfo)}@{host}"
    path, question, query = rest.partition("?")
    secrets += [segment for segment in path.split("/") if re.fullmatch(_KEYISH, segment)]
    shown_query = query
    if question:
        pairs = _pairs(query)
        shown_query, secrets = pairs.shown, [*secrets, *pairs.secrets]
    return _Word(
        f"{scheme}://{shown_authority}{slash}{path}{question}{shown_query}", tuple(secrets)
    )


def _script(word: str) -> _Word:
    """A script (``sh -c '…'``): its words walked the same way, masked in place."""
    inner = _split(word)
    walked = _walk(inner)
    shown = word
    changed = {w: _mask_shapes(m.shown) for w, m in zip(inner, walked, strict=True)}
    changed = {w: m for w, m in changed.items() if w != m}
    for original in sorted(changed, key=len, reverse=True):
        shown = shown.replace(original, changed[original])
    return _Word(shown, tuple(s for w in walked for s in w.secrets if len(s) >= 4))


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
    return [s for word in _walk(_split(command)) for s in word.secrets if len(s) >= 4]


def _is_url(word: str) -> bool:
    return "://" in word and word.split("://", 1)[0].isalnum()


def mask_command(argv: list[str]) -> list[str]:
    """``argv`` as shown to the human asked to approve it: secrets masked where they sit —
    a URL's password and secret query values (``postgres://app:***@db/prod``), the value of
    a flag, key or header named like a secret, a user flag's password, the token and webhook
    shapes — and nothing else, so the human sees what they approve. No guessing by shape:
    ``git checkout 3f9a1c0b…`` stays readable."""
    return [_mask_shapes(word.shown) for word in _walk(argv)]


def mask_script(command: str) -> str:
    """A shell command line as the human sees it: the text exactly as written — quotes,
    ``>``, ``|``, ``$(…)`` untouched — with only its secrets masked in place (as
    :func:`mask_command` finds them in its words)."""
    return _mask_shapes(_script(command).shown)


def _mask_shapes(word: str) -> str:
    for pattern in _PATTERNS:
        word = re.sub(pattern, MASK, word)
    return word


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


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
            value = re.sub(pattern, MASK, value)
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


class LineRedactor:
    """Redacts a byte stream line by line on its way to ``sink`` (a command's output to the
    iteration log or the console): a secret split across two reads is still one line here.
    A line longer than ``limit`` bytes is passed on in pieces; :meth:`flush` sends the rest."""

    def __init__(self, sink: Callable[[bytes], object], redactor: Redactor, limit: int = 65536):
        self.sink = sink
        self.redactor = redactor
        self.limit = limit
        self._partial = b""

    def write(self, chunk: bytes) -> None:
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        if not cut and len(data) > self.limit:
            cut = len(data)
        self._partial = data[cut:]
        if cut:
            self._emit(data[:cut])

    def flush(self) -> None:
        if self._partial:
            self._emit(self._partial)
            self._partial = b""

    def _emit(self, data: bytes) -> None:
        text = data.decode("utf-8", "surrogateescape")
        self.sink(self.redactor.text(text).encode("utf-8", "surrogateescape"))
