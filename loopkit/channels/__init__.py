"""Channels: one small module each, looked up by name and imported only when used.

A channel has one job: deliver the five-line message and report the outcome. It never
raises for a delivery problem; anything but success is an :class:`Outcome` with
``ok=False`` and a redacted, one-line ``error``. A new channel is one new module plus one
line in :data:`CHANNELS`.
"""

from __future__ import annotations

import importlib

from loopkit import log
from loopkit.datarecord import record
from loopkit.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol
if TYPE_CHECKING:
    from typing import Any

    from loopkit.channels.http import Response
    from loopkit.config import ChannelSettings, Config
    from loopkit.message import Note

CHANNELS: dict[str, str] = {
    "telegram": "loopkit.channels.telegram:TelegramChannel",
    "slack": "loopkit.channels.slack:SlackChannel",
    "dial": "loopkit.channels.dial:DialChannel",
    "apprise": "loopkit.channels.apprise:AppriseChannel",
    "ntfy": "loopkit.channels.ntfy:NtfyChannel",
    "pagerduty": "loopkit.channels.pagerduty:PagerDutyChannel",
    "none": "loopkit.channels.none:NoChannel",
}
# ``slack`` with ``[escalation] slack_mode = "socket"``: the two-way Slack app.
SLACK_APP = "loopkit.channels.slack_app:SlackAppChannel"


@record(frozen=True, slots=True)
class Outcome:
    ok: bool | None  # None: nothing was sent (channel "none")
    status: int | str | None = None  # HTTP status, exit code, or "timeout" / "error"
    error: str | None = None
    message_id: int | str | None = None
    earlier: tuple[Outcome, ...] = ()  # failed tries within this send, each one attempt
    hard: bool = False  # retrying this channel cannot help (a revoked token, a missing scope)

    @staticmethod
    def of(response: Response, *, message_id: int | str | None = None) -> Outcome:
        """The outcome of an HTTP send, its failed tries included."""
        earlier = tuple(Outcome(False, t.status, t.error) for t in response.tries)
        if response.error:
            return Outcome(False, response.status, response.error, None, earlier)
        return Outcome(True, response.status, None, message_id, earlier)


if TYPE_CHECKING:

    class Channel(Protocol):
        name: str

        def send(self, message: Note) -> Outcome: ...

        def problems(self) -> list[str]:
            """What is missing from the settings, each with its fix (for doctor)."""
            ...


def create(name: str, settings: ChannelSettings, **options: Any) -> Channel:
    """The channel called ``name``; ``options`` are passed to its constructor (seams)."""
    try:
        target = CHANNELS[name]
    except KeyError:
        raise ConfigError(
            f"unknown channel {name!r} (LOOPKIT_HITL_CHANNEL or [escalation] channel); "
            f"valid: {', '.join(CHANNELS)}"
        ) from None
    if name == "slack" and settings.slack_socket:
        target = SLACK_APP
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    # A channel's library logs (httpx its request lines, a token in the URL; slack_sdk,
    # apprise): its records reach the events file redacted, never the terminal raw.
    log.bridge()
    channel: Channel = cls(settings, **options)
    return channel


@record(frozen=True, slots=True)
class Problem:
    """Why a channel reaches nobody: ``topic`` (``channel``, ``channel telegram``) and what
    is wrong, with its fix."""

    topic: str
    text: str


def problems(config: Config) -> list[Problem]:
    """Why a rung of ``config``'s channel ladder reaches nobody — an unknown name, or missing
    settings — each with its fix; ``[]`` when it can be used. The one place that decides it:
    ``run`` refuses to start (and a reload to switch) on the first, ``doctor`` lists them all.
    """
    found: list[Problem] = []
    for person in config.escalation.people:  # [[escalation.people]]: each on their channel
        topic = f"channel {person.channel} ({person.name})"
        if person.channel == "slack" and not config.channels.slack_socket:
            text = ('a person is reached on Slack by the Slack app: set [escalation] '
                    'slack_mode = "socket" (see docs/slack.md)')  # fmt: skip
            found.append(Problem(topic, text))
            continue
        channel = create(person.channel, config.channels.for_person(person))
        found += [Problem(topic, text) for text in channel.problems()]
    for name in () if config.escalation.people else config.escalation.ladder:
        if name not in CHANNELS:
            text = (
                f"unknown channel {name!r} (valid: {', '.join(CHANNELS)}); set "
                "LOOPKIT_HITL_CHANNEL or [escalation] channel to one of them"
            )
            found.append(Problem("channel", text))
            continue
        channel = create(name, config.channels)
        found += [Problem(f"channel {name}", text) for text in channel.problems()]
    return found


def unusable(config: Config) -> str | None:
    """The first of :func:`problems` as one line, or None when the channel can be used."""
    found = problems(config)
    if not found:
        return None
    first = found[0]
    if first.topic == "channel":
        return first.text
    return f"{first.topic}: {first.text} (`loopkit doctor` checks it all)"
