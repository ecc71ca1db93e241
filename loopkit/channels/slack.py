"""Channel ``slack``: the five lines as ``{"text": ...}`` to an incoming webhook.

Incoming webhooks are one-way: the human answers with ``loopkit unblock --reply …``, by
deleting BLOCKED.md (the hint closing BLOCKED.md's Choices section says so), or — with
``LOOPKIT_INBOX_URL`` set — on the request's page, whose link ends the message. The two-way
Slack app (``slack_mode = "socket"``) is :mod:`loopkit.channels.slack_app`.
"""

from __future__ import annotations

import httpx

from loopkit.channels import Outcome
from loopkit.channels.http import HttpChannel, post_json
from loopkit.message import one_way
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.message import Note


class SlackChannel(HttpChannel):
    name = "slack"

    def problems(self) -> list[str]:
        if not self.settings.slack_webhook:
            return [
                "LOOPKIT_HITL_SLACK_WEBHOOK is not set: create an incoming webhook in your "
                "Slack app and export its URL"
            ]
        if not self.settings.slack_webhook.startswith(("https://", "http://")):
            return ["LOOPKIT_HITL_SLACK_WEBHOOK is not an http(s) URL: copy the whole webhook URL"]
        return []

    def send(self, message: Note) -> Outcome:
        missing = self.problems()
        if missing or not self.settings.slack_webhook:
            return Outcome(ok=False, status="error", error=missing[0].split(":")[0])
        client = self._client or httpx.Client(follow_redirects=False)
        try:
            answer = post_json(
                client,
                self.settings.slack_webhook,
                {"text": one_way(message)},
                budget=self.budget,
                redactor=Redactor(self.settings.secrets()),
                sleep=self._sleep,
            )
        finally:
            if self._client is None:
                client.close()
        return Outcome.of(answer)
