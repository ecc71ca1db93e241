"""The supervisor's steering watcher (SPEC section 22): its re-check every few seconds (a
lost inotify event costs no more) marks the loop's state changed — which makes the fleet
follower publish its row at once — only when a command or a note really came."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from loopkit.supervisor.pause import Controls
from loopkit.workspace import Workspace
from loopkit.workspace.steer import Notes, Steering


def test_a_recheck_without_a_change_marks_nothing_changed(ws: Path) -> None:
    workspace = Workspace(ws, ws / "BLOCKED.md")
    parts: Any = SimpleNamespace(workspace=workspace, changed=threading.Event(),
                                 wake=threading.Event(), stop=threading.Event())  # fmt: skip
    with Controls(parts, lambda signum: None) as controls:
        controls._look()  # the watcher's re-check, nothing new
        assert not parts.changed.is_set()
        Steering(workspace).give("pause", by="ana", via="cli")
        controls._look()
        assert parts.changed.is_set()  # a pause: the row says so at once
        parts.changed.clear()
        controls._look()
        controls._look()
        assert not parts.changed.is_set()
        Notes(workspace).add("use staging", by="ana", via="cli")
        controls._look()
        assert parts.changed.is_set()
