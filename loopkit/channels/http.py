"""What the HTTP channels share: one bounded JSON POST, and what a channel is handed.

The whole send, retry and wait included, fits in ``budget`` seconds. A 429 or a 5xx is
retried once, after ``Retry-After`` (header, or Telegram's ``parameters.retry_after``) when
the wait fits in what is left of the budget. Errors are built here, never taken from
httpx's own messages verbatim, and always pass the redactor: the URL may hold a secret.
"""

from __future__ import annotations

import email.utils
import math
import time

import httpx

from loopkit.datarecord import record, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.redact import Redactor


class HttpChannel:
    """A channel that POSTs over HTTP (Telegram, Slack's webhook, ntfy, PagerDuty): its
    settings, the time one send may take (``budget``), and the seams the tests use — the
    ``httpx.Client`` and the sleep between tries."""

    name = ""

    def __init__(
        self,
        settings: ChannelSettings,
        *,
        budget: float = 10.0,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.budget = budget
        self._client = client
        self._sleep = sleep


RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_RETRY_WAIT = 1.0


@record(frozen=True, slots=True)
class Response:
    status: int | str  # HTTP status, or "timeout" / "error" when there was no answer
    body: Any = None  # parsed JSON, when the answer was JSON
    error: str | None = None  # why this is not a success; None for a 2xx
    tries: tuple[Response, ...] = ()  # the failed tries before this one (a 500, then a 200)

    @property
    def ok(self) -> bool:
        return isinstance(self.status, int) and 200 <= self.status < 300


MAX_RETRY_AFTER = 3600.0  # a server's "retry after" is honoured up to an hour, never more


def capped_wait(value: object) -> float | None:
    """A server-given wait in seconds, within [0, MAX_RETRY_AFTER]; None when it is not a
    finite number (``1e12``, ``nan`` and ``inf`` must not overflow or spin a wait)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(max(0.0, float(value)), MAX_RETRY_AFTER)


def _retry_after(response: httpx.Response, body: Any) -> float | None:
    if isinstance(body, dict):
        params = body.get("parameters")
        if isinstance(params, dict) and capped_wait(params.get("retry_after")) is not None:
            return capped_wait(params["retry_after"])
    header = response.headers.get("retry-after")
    if not header:
        return None
    try:
        return capped_wait(float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, OverflowError):
        return None
    return capped_wait(when.timestamp() - time.time())


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _describe(status: int, body: Any, text: str) -> str:
    if isinstance(body, dict) and isinstance(body.get("description"), str):
        return f"HTTP {status}: {body['description'][:200]}"  # Telegram
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return f"HTTP {status}: {body['error'][:200]}"  # ntfy: {"code", "http", "error"}
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        # PagerDuty: {"status", "message", "errors": [...]}
        errors = body.get("errors")
        said = [str(e) for e in errors] if isinstance(errors, list) else []
        detail = f" ({'; '.join(said)})" if said else ""
        return f"HTTP {status}: {(body['message'] + detail)[:200]}"
    short = text.strip()
    if body is None and short and len(short) <= 100 and short.isprintable():
        return f"HTTP {status}: {short}"  # Slack answers with a short word: no_service, ...
    return f"HTTP {status}"


def post_json(
    client: httpx.Client,
    url: str,
    payload: dict[str, Any],
    *,
    budget: float,
    redactor: Redactor,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    attempts: int = 2,
    headers: dict[str, str] | None = None,
) -> Response:
    """POST ``payload`` to ``url`` within ``budget`` s; ``attempts=1`` never retries. The
    answer carries the failed tries before it (``tries``): each is one delivery attempt.
    ``headers``: more request headers (an access token), never logged."""
    failed: list[Response] = []

    def done(response: Response) -> Response:
        return replace(response, tries=tuple(failed))

    deadline = clock() + budget
    last: Response | None = None
    for attempt in range(1, attempts + 1):
        remaining = deadline - clock()
        if remaining <= 0:
            break
        try:
            answer = client.post(
                url, json=payload, headers=headers, timeout=httpx.Timeout(remaining)
            )
        except httpx.TimeoutException:
            return done(Response("timeout", error=f"no answer within {budget:g} s"))
        except httpx.HTTPError as exc:
            reason = redactor.text(str(exc)) or type(exc).__name__
            return done(Response("error", error=f"{type(exc).__name__}: {reason}"))
        body = _json(answer)
        if 200 <= answer.status_code < 300:
            return done(Response(answer.status_code, body))
        error = redactor.text(_describe(answer.status_code, body, answer.text))
        last = Response(answer.status_code, body, error)
        if attempt == attempts or answer.status_code not in RETRY_STATUSES:
            break
        wait = _retry_after(answer, body)
        wait = DEFAULT_RETRY_WAIT if wait is None else wait
        if wait >= deadline - clock():
            beyond = f"; asked to retry after {wait:g} s, beyond the {budget:g} s budget"
            return done(Response(last.status, body, f"{last.error}{beyond}"))
        failed.append(last)
        sleep(wait)
    return done(last or Response("timeout", error=f"no answer within {budget:g} s"))
