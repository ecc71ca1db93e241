"""The one Slack Web API client of loopkit: ``slack_sdk``'s ``WebClient``, bounded, with
Slack's errors turned into one line that says what to fix.

Slack answers HTTP 200 with ``{"ok": false, "error": "not_in_channel"}`` for most mistakes
(https://api.slack.com/web#evaluating_responses); ``missing_scope`` also names the scope
``needed``. A 429 (``ratelimited``) carries ``Retry-After`` and is retried once when the wait
fits in the budget, as every channel's send is (SPEC §3). ``slack_sdk`` (the ``[slack]``
extra) is imported here only, when a client is made: importing this module costs nothing
without it, and its settings can be checked (``doctor``) on an install that lacks it.
"""

from __future__ import annotations

import math
import time

from loopkit.log import get_logger
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import ChannelSettings

log = get_logger("loopkit.phone")

BOT_TOKEN = "LOOPKIT_HITL_SLACK_BOT_TOKEN"
APP_TOKEN = "LOOPKIT_HITL_SLACK_APP_TOKEN"
CHANNEL = "LOOPKIT_HITL_SLACK_CHANNEL"


class SlackCallError(Exception):
    """A Web API call that failed: ``code`` is Slack's error (``not_in_channel``), or
    ``http_<status>``, ``network``, ``timeout``; ``hard``: retrying cannot help."""

    def __init__(self, text: str, code: str, status: int | str, *, hard: bool = False) -> None:
        super().__init__(text)
        self.code = code
        self.status = status
        self.hard = hard


def token_problems(settings: ChannelSettings) -> list[str]:
    """The Slack app's settings, each missing or misshapen one with its fix."""
    found = []
    bot, app = settings.slack_bot_token, settings.slack_app_token
    if not bot:
        found.append(
            f"{BOT_TOKEN} is not set: export the app's Bot User OAuth Token (xoxb-…, "
            "OAuth & Permissions); see docs/slack.md"
        )
    elif not bot.startswith("xoxb-"):
        found.append(
            f"{BOT_TOKEN} does not start with xoxb-: it must be the Bot User OAuth "
            "Token (OAuth & Permissions), not a user or app token"
        )
    if not app:
        found.append(
            f"{APP_TOKEN} is not set: generate an app-level token with "
            "connections:write (Basic Information → App-Level Tokens); see "
            "docs/slack.md"
        )
    elif not app.startswith("xapp-"):
        found.append(
            f"{APP_TOKEN} does not start with xapp-: it must be an app-level token "
            "with connections:write (Basic Information → App-Level Tokens)"
        )
    if not settings.slack_channel:
        found.append(
            f"{CHANNEL} is not set: export the channel's id (C…, at the bottom of "
            "its details) and /invite the app there"
        )
    return found


def app_id(app_token: str | None) -> str:
    """The app's public id from its app-level token (``xapp-1-A0123ABCD-…``): not a secret;
    names the app's Socket Mode lease."""
    parts = (app_token or "").split("-")
    if len(parts) > 2 and parts[2].isalnum():
        return parts[2]
    return "unknown"


def _fix(method: str, error: str, body: dict[str, Any], settings: ChannelSettings) -> str:
    token = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
    channel = settings.slack_channel or "the channel"
    fixes = {
        "invalid_auth": f"{token} is not valid: copy it again from the app's settings",
        "not_authed": f"{token} is not valid: copy it again from the app's settings",
        "token_revoked": f"{token} was revoked: reinstall the app and copy the new token",
        "account_inactive": f"{token} belongs to a deleted app or user: reinstall the app",
        "not_allowed_token_type": f"{token} is the wrong kind of token: the bot token is "
        "xoxb-…, the app-level token xapp-… with connections:write",
        "missing_scope": f"the app lacks the scope {body.get('needed') or '?'}: add it under "
        "OAuth & Permissions (or App-Level Tokens for connections:write), then reinstall the app",
        "not_in_channel": f"the app is not in {channel}: type /invite @<your app> there",
        "channel_not_found": f"{CHANNEL} {channel!r} is no channel the app can see: use the "
        "channel's id (C…) and /invite the app there",
        "is_archived": f"{channel} is archived: unarchive it or choose another channel",
        "ratelimited": "Slack asked to slow down: loopkit retries later",
    }
    return fixes.get(error, "see https://api.slack.com/methods/" + method + "#errors")


HARD = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "token_revoked",
        "account_inactive",
        "not_allowed_token_type",
        "missing_scope",
        "not_in_channel",
        "channel_not_found",
        "is_archived",
    }
)


class SlackWeb:
    """``WebClient`` with loopkit's bounds: one call fits in ``budget`` seconds, a 429 is
    retried once after ``Retry-After`` when that fits, and every failure is a
    :class:`SlackCallError` whose text is one redacted line with its fix."""

    def __init__(
        self,
        settings: ChannelSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.redactor = Redactor(settings.secrets())
        self._sleep = sleep
        self._clock = clock
        from slack_sdk import WebClient  # the [slack] extra: loaded where a client is made

        self.client = WebClient(
            token=settings.slack_bot_token, base_url=settings.slack_api, retry_handlers=[]
        )

    def call(self, method: str, args: dict[str, Any], *, budget: float = 10.0) -> dict[str, Any]:
        """POST ``method`` with ``args`` as JSON; the answer's body on ``"ok": true``."""
        from slack_sdk.errors import SlackApiError

        deadline = self._clock() + budget
        for attempt in (1, 2):
            remaining = deadline - self._clock()
            if remaining <= 0:
                break
            self.client.timeout = max(1, math.ceil(remaining))
            try:
                if method == "apps.connections.open":
                    response = self.client.apps_connections_open(
                        app_token=self.settings.slack_app_token or ""
                    )
                else:
                    response = self.client.api_call(method, json=args)
                data = response.data
                return data if isinstance(data, dict) else {}
            except SlackApiError as exc:
                answer = exc.response
                body = answer.data if isinstance(answer.data, dict) else {}
                error = str(body.get("error") or f"http_{answer.status_code}")
                wait = _retry_after(answer.headers) if answer.status_code == 429 else None
                if attempt == 1 and wait is not None and wait < deadline - self._clock():
                    self._sleep(wait)
                    continue
                text = f"{method}: {error} — {_fix(method, error, body, self.settings)}"
                raise SlackCallError(
                    self.redactor.text(text), error, answer.status_code, hard=error in HARD
                ) from None
            except TimeoutError:
                raise SlackCallError(
                    f"{method}: no answer within {budget:g} s", "timeout", "timeout"
                ) from None
            except OSError as exc:  # URLError, a refused connection
                reason = self.redactor.text(str(getattr(exc, "reason", exc)))
                raise SlackCallError(
                    f"{method}: cannot reach Slack at {self.settings.slack_api} ({reason}); "
                    "check the network (or LOOPKIT_HITL_SLACK_API)",
                    "network",
                    "error",
                ) from None
        raise SlackCallError(f"{method}: no answer within {budget:g} s", "timeout", "timeout")

    def try_call(self, method: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """A call whose failure is logged, never raised: an edit, a note to a stranger."""
        try:
            return self.call(method, args, budget=5.0)
        except SlackCallError as exc:
            log.warning("slack_call_failed", method=method, msg=f"slack: {exc}")
            return None


def _retry_after(headers: Any) -> float | None:
    """Slack's ``Retry-After`` in seconds (1 when absent); None when it is no sane number."""
    found = {str(k).lower(): v for k, v in dict(headers or {}).items()}
    value = found.get("retry-after")
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        wait = float(value) if value is not None else 1.0
    except (TypeError, ValueError):
        return None
    return wait if math.isfinite(wait) and 0 <= wait <= 3600 else None
