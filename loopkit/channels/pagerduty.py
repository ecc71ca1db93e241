"""Channel ``pagerduty``: the block opens an incident for whoever is on call (SPEC §29).

PagerDuty's Events API v2 (https://developer.pagerduty.com/docs/events-api-v2/overview/,
"Send an Alert Event"): one JSON POST to ``{LOOPKIT_HITL_PAGERDUTY_API}/v2/enqueue``
(default ``https://events.pagerduty.com``) with the integration key of an Events API v2
integration (``LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY``, a secret):

- the block is a ``trigger`` whose ``dedup_key`` is the request id, its five lines the
  ``summary`` (at most 1024 characters) and the ``custom_details``, its inbox page a link;
- :meth:`PagerDutyChannel.event` sends ``acknowledge`` (someone opened the request in the
  inbox) and ``resolve`` (it was answered, or ended otherwise) for the same key.

PagerDuty answers 202 when it took the event; 400 (an invalid event) is a hard failure,
429 and 5xx are retried (:func:`~loopkit.channels.http.post_json`), as for every channel.
The page is one-way: the human answers in the inbox, from another channel or the CLI.
"""

from __future__ import annotations

import httpx

from loopkit.channels import Outcome
from loopkit.channels.http import HttpChannel, post_json
from loopkit.message import Message, Reminder, fold
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from loopkit.message import Note

MAX_SUMMARY = 1024  # characters (the Events API v2 reference)
MAX_DEDUP_KEY = 255
KEY = "LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY"


def trigger(routing_key: str, message: Message | Reminder) -> dict[str, Any]:
    """The ``trigger`` event of a block (see the module)."""
    lines = message.text.split("\n")
    summary = "\n".join(lines)
    if len(summary) > MAX_SUMMARY:
        summary = summary[: MAX_SUMMARY - 1] + "…"
    details: dict[str, Any] = {"request_id": message.request_id, "repo": message.repo}
    if isinstance(message, Message):
        keys = ("blocked", "question", "context", "attempted", "choices", "also_asked")
        for key, line in zip(keys, lines, strict=False):
            if key == "also_asked":  # "(also asked: Ana, Ben)"
                line = line.removeprefix("(also asked: ").removesuffix(")")
            elif key != "blocked" and ": " in line:
                line = line.split(": ", 1)[1]
            details[key] = line
    else:
        details["reminder"] = message.text
    p0 = isinstance(message, Message) and (message.p0 or message.gate)
    event: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": message.request_id[:MAX_DEDUP_KEY],
        "payload": {
            "summary": summary,
            "source": f"loopkit: {fold(message.repo, 200)}",
            "severity": "critical" if p0 else "error",
            "component": "loopkit",
            "group": fold(message.repo, 200),
            "class": "blocked loop",
            "custom_details": details,
        },
        "client": "loopkit",
    }
    if message.link:
        event["client_url"] = message.link
        event["links"] = [{"href": message.link, "text": "Answer in the loopkit inbox"}]
    return event


class PagerDutyChannel(HttpChannel):
    name = "pagerduty"

    @property
    def url(self) -> str:
        return f"{self.settings.pagerduty_api.rstrip('/')}/v2/enqueue"

    def problems(self) -> list[str]:
        if not self.settings.pagerduty_routing_key:
            return [
                f"{KEY} is not set: add an Events API v2 integration to a PagerDuty service "
                "and export its integration key; see docs/channels.md"
            ]
        return []

    def send(self, message: Note) -> Outcome:
        if not isinstance(message, Message | Reminder):
            # a notice, a follow-up: nothing to page anyone for (an ending resolves: event())
            return Outcome(ok=None, status="skipped")
        key = self.settings.pagerduty_routing_key
        if not key:
            return Outcome(ok=False, status="error", error=f"{KEY} is not set", hard=True)
        return self._post(trigger(key, message))

    def event(self, action: Literal["acknowledge", "resolve"], request_id: str) -> Outcome:
        """``acknowledge`` or ``resolve`` the incident the block ``request_id`` opened."""
        key = self.settings.pagerduty_routing_key
        if not key:
            return Outcome(ok=False, status="error", error=f"{KEY} is not set", hard=True)
        return self._post(
            {"routing_key": key, "event_action": action,
             "dedup_key": request_id[:MAX_DEDUP_KEY]}
        )  # fmt: skip

    def _post(self, event: dict[str, Any]) -> Outcome:
        client = self._client or httpx.Client(follow_redirects=False)
        try:
            answer = post_json(
                client,
                self.url,
                event,
                budget=self.budget,
                redactor=Redactor(self.settings.secrets()),
                sleep=self._sleep,
            )
        finally:
            if self._client is None:
                client.close()
        body = answer.body if isinstance(answer.body, dict) else {}
        dedup = body.get("dedup_key") if isinstance(body.get("dedup_key"), str) else None
        return Outcome.of(answer, message_id=dedup)
