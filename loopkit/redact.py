"""Secret redaction: the one place that decides what a secret looks like.

Every log line (ours and httpx's), every error message, every recorded delivery error and
what a command printed (the iteration log, the console, the evidence on a question) passes
through :meth:`Redactor.text`; the texts of a new question (its prompt, context, attempts,
choices) through :func:`mask_shapes`. Known secret values (from the environment) are
replaced exactly; and what looks like a secret is masked wherever it appears, whoever
wrote it (SPEC §26) — an agent that prints ``api_key=sk-ant-…`` shows ``api_key=***`` in
``BLOCKED.md``, the message, ``status``, the inbox and the logs:

- a key of a known shape: its issuer's prefix, alphabet and length (Anthropic and OpenAI
  ``sk-…``, Stripe ``sk_live_…``, Slack ``xox?-…`` and ``xapp-…``, GitHub ``gh?_…`` and
  ``github_pat_…``, GitLab ``glpat-…``, AWS ``AKIA…``/``ASIA…``, Google ``AIza…``, Hugging
  Face ``hf_…``, npm ``npm_…``, PyPI ``pypi-…``, a JWT, a Bot API token, a Slack webhook
  path), masked whole;
- a ``-----BEGIN … PRIVATE KEY-----`` block, to its END line (or the end of the text);
- the value of a name that says secret — ``password``, ``passwd``, ``passphrase``,
  ``secret``, ``token``, ``api_key``, ``access_key``, ``secret_key``, ``private_key``,
  ``client_secret``, alone or at a name's end (``db_password``, ``GITHUB_TOKEN``,
  ``AWS_SECRET_ACCESS_KEY``) — after ``=``, or after ``:`` before a quoted value (JSON,
  YAML), its name kept (``api_key=***``); a ``Bearer``/``Basic`` credential; a URL's
  password (``https://user:***@host``).

What stays (decided, and held by property tests): no word is masked for merely looking
random — a git commit, a SHA-256, a UUID, a session id stay readable; a name that only
contains a secret word (``max_tokens=4096``, ``password_file=…``, ``tokenizer=bpe``); a
value that is no secret but a reference to one (``$DB_PASSWORD``, ``${TOKEN}``, ``<your
key>``, ``None``, a call ``getpass()``, a subscript ``os.environ['API_KEY']``) or a value
under four characters. A human's own reply is not
masked: it is theirs to hand to the agent.
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
# Keys by their issuer's shape — prefix, alphabet, length (and a digit, where a word of that
# prefix could be one: `sk-learn`) — each with the text that must be there for it to be
# tried (a `str` search: most output holds none); that a key starts a word is checked on
# each match (:func:`_key`).
_KEY_SHAPES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("sk-",), r"sk-(?=[\w-]*\d)[\w-]{20,}"),  # Anthropic sk-ant-…, OpenAI sk-…, sk-proj-…
    (("k_live_", "k_test_"), r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    (("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    (("xapp-",), r"xapp-\d-[A-Za-z0-9-]{10,}"),  # Slack app-level token
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{36,}"),  # GitHub
    (("github_pat_",), r"github_pat_\w{40,}"),  # GitHub fine-grained
    (("glpat-",), r"glpat-[\w-]{20,}"),  # GitLab
    (("AKIA", "ASIA", "ABIA", "ACCA"), r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    (("AIza",), r"AIza[\w-]{35}(?![\w-])"),  # Google API key
    (("hf_",), r"hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    (("npm_",), r"npm_[A-Za-z0-9]{36,}"),  # npm
    (("pypi-",), r"pypi-AgE[\w-]{50,}"),  # PyPI
    (("eyJ",), r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}"),  # a JWT
)
# A private key, to its END line (or the end of what is there).
_PRIVATE_KEY = (
    r"(?s)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE "
    r"KEY-----|.*)"
)
_KEY_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
_KEY_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
# Names that say secret, and the words they end in (looked for with str.find: a regular
# expression that ignores case is ten times slower on an agent's megabytes of output).
_SECRET_NAMES = ("password", "passwd", "passphrase", "secret", "token", "api_key", "api-key",
                 "apikey", "access_key", "access-key", "secret_key", "secret-key",
                 "private_key", "private-key", "client_secret", "client-secret")  # fmt: skip
_SECRET_WORDS = r"pass|secret|token|key"
_NAME_TAIL = r"[a-z0-9_-]*"
# What follows such a name: `=`, or `:` before a quoted value; then the value, unless it is
# a call or a subscript (`getpass()`, `os.environ['API_KEY']`).
_ASSIGNED = (
    r"[\"']?\s*(?:=|:(?=\s*[\"']))\s*[\"']?"
    r"(?P<value>(?>[^\s\"'`,;&()\[\]{}<>]+))(?!\s*[(\[])"
)
_CREDENTIAL = r"(?i)(?<![\w-])(?:bearer|basic)\s+(?P<value>(?=[\w.~+/=-]*\d)[\w.~+/=-]{16,})"
_URL_PASSWORD = r"(?<=://)[^\s/:@]+:(?P<value>[^\s/@]+)(?=@)"
# What a value named as a secret may be without being one.
_REFERENCE = r"(?i)\A(?:[$%*]|(?:none|null|nil|true|false|undefined)\Z)"


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
    return mask_shapes(word)


def mask_shapes(text: str) -> str:
    """``text`` with every secret of a known shape masked (see the module's docstring):
    the rule for what an agent or a command wrote, wherever it goes next."""
    for pattern in _PATTERNS:
        text = re.sub(pattern, MASK, text)
    shapes = [shape for needles, shape in _KEY_SHAPES if any(n in text for n in needles)]
    if shapes:
        text = re.sub("|".join(shapes), _key, text)
    if "PRIVATE KEY-----" in text:
        text = re.sub(_PRIVATE_KEY, MASK, text)
    lower = text.lower()
    spans = _named_values(text, lower)
    if "bearer" in lower or "basic" in lower:
        spans += [m.span("value") for m in re.finditer(_CREDENTIAL, text)]
    if "://" in text and "@" in text:
        spans += [m.span("value") for m in re.finditer(_URL_PASSWORD, text)]
    for start, end in sorted(set(spans), reverse=True):  # from the end: spans stay valid
        value = text[start:end]
        if len(value) >= 4 and not re.match(_REFERENCE, value):
            text = text[:start] + MASK + text[end:]
    return text


def _key(match: re.Match[str]) -> str:
    """A key of a known shape, masked when it starts a word (``task-…`` holds no ``sk-…``)."""
    start = match.start()
    before = match.string[start - 1] if start else " "
    return match[0] if before.isalnum() or before in "_-" else MASK


def _named_values(text: str, lower: str) -> list[tuple[int, int]]:
    """Where the values of names that say secret are (``db_password=…``, ``"token": "…"``):
    a name is one of :data:`_SECRET_NAMES`, or ends in one after ``_`` or ``-``
    (``mypassword``, ``max_tokens``, ``password_file`` are no such name)."""
    found: list[tuple[int, int]] = []
    tail, assigned = re.compile(_NAME_TAIL), re.compile(_ASSIGNED)  # re's cache: once
    for hit in re.finditer(_SECRET_WORDS, lower):
        end = tail.match(lower, hit.end()).end()  # type: ignore[union-attr]  # [...]* matches
        value = assigned.match(text, end)
        if value is None:  # most hits: `passed`, `key` in prose — nothing assigned
            continue
        start = hit.start()
        while start > 0 and (lower[start - 1].isalnum() or lower[start - 1] in "_-"):
            start -= 1  # to the name's start
        name = lower[start:end]
        if any(name == n or name.endswith(("_" + n, "-" + n)) for n in _SECRET_NAMES):
            found.append(value.span("value"))
    return found


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
        return mask_shapes(value)

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
    A line longer than ``limit`` bytes is passed on in pieces; :meth:`flush` sends the rest.
    A private key's block spans lines: from its BEGIN line to its END line nothing passes,
    however the lines arrive."""

    def __init__(self, sink: Callable[[bytes], object], redactor: Redactor, limit: int = 65536):
        self.sink = sink
        self.redactor = redactor
        self.limit = limit
        self._partial = b""
        self._in_key = False  # inside a private key's block, its BEGIN line passed already

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
        if self._in_key:
            end = re.search(_KEY_END, text)
            if end is None:
                return  # the block's body: its BEGIN was masked, with all that followed
            text, self._in_key = text[end.end() :], False
        begins = list(re.finditer(_KEY_BEGIN, text))
        self._in_key = bool(begins) and not re.search(_KEY_END, text[begins[-1].end() :])
        self.sink(self.redactor.text(text).encode("utf-8", "surrogateescape"))
