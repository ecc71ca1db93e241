"""Channel ``none``: no primary send; BLOCKED.md is the whole escalation."""

from __future__ import annotations

from loopkit.channels import Outcome

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import ChannelSettings
    from loopkit.message import Note


class NoChannel:
    name = "none"

    def __init__(self, settings: ChannelSettings, **_: Any) -> None:
        self.settings = settings

    def send(self, message: Note) -> Outcome:
        return Outcome(ok=None)

    def problems(self) -> list[str]:
        return []
