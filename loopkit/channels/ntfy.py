"""Channel ``ntfy``: a phone push with answer buttons, no chat app (SPEC section 29).

``LOOPKIT_HITL_NTFY_URL`` is the full topic URL on ntfy.sh or a server of one's own
(``https://ntfy.sh/<topic>``; a person's ``address`` in ``[[escalation.people]]``);
``LOOPKIT_HITL_NTFY_TOKEN`` an access token for a protected topic. The message is published
as JSON to the server's root URL (https://docs.ntfy.sh/publish/#publish-as-json):

- ``title`` the first line, ``message`` the other four (and "(also asked: …)");
- ``priority`` 5 for a gated command, 4 for another irreversible question, 3 otherwise;
- ``click``: the request's page in the web inbox;
- ``actions`` (ntfy allows three): one ``http`` action per choice, POSTed by the phone in
  the background to the inbox's one-tap URL (signed, single use, no cookie —
  :mod:`loopkit.home.taps`); a choice whose approval takes two taps gets a ``view`` action
  opening the confirm page instead; a ``view`` action "Open" to the request's page only
  where a place is left.

The buttons answer through ``LOOPKIT_INBOX_URL``, so the channel needs it. Never the inbox
token: a tap's URL carries its own signature. A reminder and a follow-up (how the question
ended) are plain pushes. Retries and failures are every channel's
(:func:`~loopkit.channels.http.post_json`); an ntfy error body (``{"code", "http",
"error"}``) gives the error line.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from loopkit.channels import Outcome
from loopkit.channels.http import HttpChannel, post_json
from loopkit.message import LETTERS, Message, Reminder, fold
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.message import Note

MAX_ACTIONS = 3  # ntfy's limit (https://docs.ntfy.sh/publish/#action-buttons)
MAX_MESSAGE = 4096  # bytes: longer becomes an attachment on ntfy (its "Limitations")


def split_topic(url: str) -> tuple[str, str]:
    """``https://ntfy.sh/my-topic`` → (``https://ntfy.sh``, ``my-topic``)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}", parts.path.strip("/")


def priority(message: Note) -> int:
    if isinstance(message, Message) and message.gate:
        return 5
    if isinstance(message, Message) and message.p0:
        return 4
    return 3


def actions(message: Note) -> list[dict[str, Any]]:
    """One button per choice, then "Open" only where a place is left."""
    found: list[dict[str, Any]] = []
    buttons = message.buttons if isinstance(message, Message) else ()
    for index, button in enumerate(buttons[:MAX_ACTIONS]):
        label = f"{LETTERS[index]}) {button.label}"
        if button.confirm:  # two taps: the page that asks the second one
            found.append({"action": "view", "label": label, "url": button.url, "clear": True})
        else:
            found.append({"action": "http", "label": label, "url": button.url,
                          "method": "POST", "clear": True})  # fmt: skip
    link = getattr(message, "link", None)
    if link and len(found) < MAX_ACTIONS:
        found.append({"action": "view", "label": "Open", "url": link})
    return found


def payload(topic: str, message: Note) -> dict[str, Any]:
    """The JSON ntfy is published with (see the module)."""
    title, _, body = message.text.partition("\n")
    if not body:  # a reminder, a notice, a follow-up: one line
        title, body = f"[loopkit] {fold(message.repo, 100)}", message.text
    data: dict[str, Any] = {
        "topic": topic,
        "title": title,
        "message": _cut(body),
        "priority": priority(message),
    }
    link = getattr(message, "link", None)
    if link:
        data["click"] = link
    found = actions(message)
    if found:
        data["actions"] = found
    return data


def _cut(text: str) -> str:
    raw = text.encode()
    if len(raw) <= MAX_MESSAGE:
        return text
    return raw[: MAX_MESSAGE - 3].decode("utf-8", "ignore") + "…"


class NtfyChannel(HttpChannel):
    name = "ntfy"

    def problems(self) -> list[str]:
        found = []
        if not self.settings.ntfy_url:
            found.append(
                "LOOPKIT_HITL_NTFY_URL is not set: export the topic's URL (e.g. "
                "https://ntfy.sh/<a long random topic>); see docs/channels.md"
            )
        if not self.settings.inbox_url:
            found.append(
                "LOOPKIT_INBOX_URL is not set: ntfy's buttons answer through the web inbox; "
                "export its address as the phone reaches it (see docs/channels.md, ntfy)"
            )
        return found

    def send(self, message: Note) -> Outcome:
        missing = self.problems()
        needs_inbox = isinstance(message, Message | Reminder)
        if not self.settings.ntfy_url or (missing and needs_inbox):
            return Outcome(ok=False, status="error", error=missing[0].split(":")[0], hard=True)
        base, topic = split_topic(self.settings.ntfy_url)
        token = self.settings.ntfy_token
        headers = {"Authorization": f"Bearer {token}"} if token else None
        client = self._client or httpx.Client(follow_redirects=False)
        try:
            answer = post_json(
                client,
                f"{base}/",
                payload(topic, message),
                budget=self.budget,
                redactor=Redactor(self.settings.secrets()),
                sleep=self._sleep,
                headers=headers,
            )
        finally:
            if self._client is None:
                client.close()
        body = answer.body if isinstance(answer.body, dict) else {}
        published = body.get("id") if isinstance(body.get("id"), str) else None
        return Outcome.of(answer, message_id=published)
