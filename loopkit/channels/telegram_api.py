"""The one Telegram Bot API client: every call is a POST with a JSON body.

``{api}/bot{token}/{method}`` carries the token in its path, so URLs never leave this module
(and the redactor masks httpx's own request log line). Two ways to call:

- :meth:`BotApi.post` — bounded in time, one retry on 429/5xx honouring ``Retry-After``
  (a message being delivered); returns a :class:`~loopkit.channels.http.Response`.
- :meth:`BotApi.call` — one attempt, the result or a :class:`BotApiError` whose ``kind``
  says what to do (``conflict``: another consumer polls this bot; ``rate``: wait ``wait``
  s; ``network``; ``http``) — for the update poller and ``doctor``.
"""

from __future__ import annotations

import time
from typing import Literal

import httpx

from loopkit.channels.http import Response, capped_wait, post_json
from loopkit.log import get_logger
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import ChannelSettings

log = get_logger("loopkit.phone")

ErrorKind = Literal["conflict", "rate", "network", "http"]
DEFAULT_RATE_WAIT = 5.0  # a 429 without retry_after


class BotApiError(Exception):
    """A call that did not succeed; ``wait`` is how long to back off at least."""

    def __init__(self, kind: ErrorKind, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.wait = wait


class BotApi:
    """A Bot API client for one bot. ``client`` is the seam (an ``httpx.Client``)."""

    def __init__(
        self,
        settings: ChannelSettings,
        *,
        client: httpx.Client | None = None,
        redactor: Redactor | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.redactor = redactor or Redactor(settings.secrets())
        self.client = client or httpx.Client(follow_redirects=False)
        self.sleep = sleep

    def _url(self, method: str) -> str:
        return f"{self.settings.telegram_api}/bot{self.settings.telegram_token}/{method}"

    def post(self, method: str, payload: dict[str, Any], *, budget: float) -> Response:
        """``method`` within ``budget`` seconds, retried once on 429/5xx; never raises."""
        answer = post_json(
            self.client,
            self._url(method),
            payload,
            budget=budget,
            redactor=self.redactor,
            sleep=self.sleep,
        )
        if answer.ok and not _ok_true(answer.body):
            return Response(answer.status, answer.body, f'HTTP {answer.status} without "ok": true')
        return answer

    def call(self, method: str, payload: dict[str, Any], *, timeout: float = 10.0) -> Any:
        """One attempt at ``method``: its ``result``, or :class:`BotApiError`."""
        answer = post_json(
            self.client,
            self._url(method),
            payload,
            budget=timeout,
            redactor=self.redactor,
            attempts=1,
        )
        if answer.ok and _ok_true(answer.body):
            return answer.body.get("result")
        if answer.status in ("timeout", "error"):
            raise BotApiError("network", f"{method}: {answer.error}")
        body = answer.body if isinstance(answer.body, dict) else {}
        description = ""
        if isinstance(body.get("description"), str):
            description = ": " + self.redactor.text(body["description"][:200])
        what = f"{method}: HTTP {answer.status}{description}"
        if answer.status == 409:
            raise BotApiError("conflict", what)
        if answer.status == 429:
            params = body.get("parameters")
            retry = params.get("retry_after") if isinstance(params, dict) else None
            wait = capped_wait(retry)
            raise BotApiError("rate", what, DEFAULT_RATE_WAIT if wait is None else wait)
        raise BotApiError("http", what)

    def try_call(self, method: str, payload: dict[str, Any]) -> Any:
        """A best-effort call (acknowledgements, edits): a failure is logged, never raised."""
        try:
            return self.call(method, payload)
        except BotApiError as exc:
            log.warning("telegram_call_failed", method=method, msg=f"telegram {exc}")
            return None

    def close(self) -> None:
        self.client.close()


def _ok_true(body: Any) -> bool:
    return isinstance(body, dict) and body.get("ok") is True
