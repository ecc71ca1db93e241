"""Channel ``none``: no primary send; BLOCKED.md is the whole escalation."""

from __future__ import annotations

from typing import Any

from loopkit.channels import Outcome
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
