"""Channel ``apprise``: the five lines to anyone, anywhere, through the Apprise library.

``LOOPKIT_HITL_APPRISE_URLS`` holds Apprise's own URLs, separated by commas or spaces
(``discord://…``, ``mailto://…``, ``ntfys://…``, ``pover://…``, ``msteams://…``; the list
is https://github.com/caronc/apprise/wiki). One-way, like a Slack webhook: the message ends
with the request's page in the inbox when ``LOOPKIT_INBOX_URL`` is set. The send succeeds
when every URL took the message; one that did not is a failure like any channel's
(retried with backoff, then the ladder's next rung), with Apprise's own warning as the
error, redacted — the URLs carry keys. ``apprise`` is imported only when a message is sent.
"""

from __future__ import annotations

import threading
import warnings

from loopkit import extras
from loopkit.channels import Outcome
from loopkit.message import fold, one_way
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.message import Note

URLS = "LOOPKIT_HITL_APPRISE_URLS"


class AppriseChannel:
    name = "apprise"

    def __init__(self, settings: ChannelSettings, *, budget: float = 10.0, **_: Any) -> None:
        self.settings = settings
        self.budget = budget
        self.redactor = Redactor(settings.secrets())

    def problems(self) -> list[str]:
        if not self.settings.apprise_urls:
            return [
                f"{URLS} is not set: export one or more Apprise URLs (e.g. "
                "ntfys://ntfy.sh/my-topic); see docs/channels.md"
            ]
        if not extras.installed("apprise"):
            return [extras.needs("apprise")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import apprise

            bad = self._bad_urls(apprise.Apprise())
        if bad:
            return [_unknown(bad)]
        return []

    def _bad_urls(self, target: Any) -> list[int]:
        """The 1-based positions of the URLs Apprise does not take (never the URLs: keys —
        Apprise's own log line, "Unparseable URL …", is kept quiet for that reason)."""
        import logging

        said = logging.getLogger("apprise")
        was, said.disabled = said.disabled, True
        try:
            urls = enumerate(self.settings.apprise_urls, 1)
            return [i for i, url in urls if not target.add(url)]
        finally:
            said.disabled = was

    def send(self, message: Note) -> Outcome:
        missing = self.problems()
        if missing:
            return Outcome(ok=False, status="error", error=missing[0], hard=True)
        text = one_way(message)
        title, _, body = text.partition("\n")
        result: dict[str, Any] = {}

        def notify() -> None:
            # Apprise loads its plugins as URLs are added; their deprecations are not ours.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                import apprise

                target = apprise.Apprise()
                result["bad"] = self._bad_urls(target)
                if result["bad"]:
                    return
                capture = apprise.LogCapture(level=apprise.logging.WARNING)  # type: ignore[no-untyped-call]
                with capture as said:
                    result["ok"] = bool(target.notify(body=body or title, title=title))
                    result["said"] = said.getvalue()

        worker = threading.Thread(target=notify, daemon=True, name="loopkit-apprise")
        worker.start()
        worker.join(self.budget)
        if result.get("bad"):
            return Outcome(ok=False, status="error", hard=True, error=_unknown(result["bad"]))
        if "ok" not in result:
            return Outcome(ok=False, status="timeout", error=f"no answer within {self.budget:g} s")
        if result["ok"]:
            return Outcome(ok=True, status=0)
        lines = [line for line in str(result.get("said") or "").splitlines() if line.strip()]
        last = lines[-1].split(" - ", 2)[-1] if lines else "a service refused the message"
        error = self.redactor.text(f"apprise: {fold(last, 200)}")
        return Outcome(ok=False, status="error", error=error)


def _unknown(positions: list[int]) -> str:
    """The URLs Apprise cannot take, named by their place (``URL #2``), never shown."""
    which = ", ".join(f"#{n}" for n in positions)
    return (
        f"URL {which} of {URLS} is not one Apprise can parse: check its scheme and its parts "
        "against the Apprise wiki (https://github.com/caronc/apprise/wiki)"
    )
