"""Waiting out a block: until BLOCKED.md is gone, the request is answered, a stop, or a timeout.

"Gone" means the workspace folder exists and nothing is at the block path for a short
confirmation window. Editors that save by renaming the original away and writing a new
file (vim with ``backupcopy=no``, JetBrains "safe write") leave the path empty for a few
milliseconds; the window makes sure such a save is never taken for an unblock. A folder
at the block path is not "gone" either: the loop stays blocked until it is removed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from loopkit.watch.folder import FolderWatch
from loopkit.watch.wake import Waker

CONFIRM_WINDOW = 0.008  # seconds; SPEC: absence is confirmed over ≤ 10 ms
Outcome = Literal["gone", "answered", "stopped", "timeout"]


def is_gone(path: Path) -> bool:
    return path.parent.is_dir() and not os.path.lexists(path)


def _confirmed(path: Path, wake: Waker, stop: threading.Event, window: float) -> bool:
    end = time.monotonic() + window
    while True:
        wake.clear()
        if not is_gone(path):
            return False
        remaining = end - time.monotonic()
        if remaining <= 0 or stop.is_set():
            return not stop.is_set()
        wake.wait(remaining)


def wait_unblock(
    path: Path,
    watch: FolderWatch,
    wake: Waker,
    stop: threading.Event,
    *,
    deadline: float | None,
    answered: Callable[[], bool] = lambda: False,
    window: float = CONFIRM_WINDOW,
) -> Outcome:
    """Block until one of the outcomes; ``deadline`` is a ``time.monotonic()`` value."""
    while True:
        wake.clear()
        watch.ensure()
        if stop.is_set():
            return "stopped"
        if is_gone(path):
            if _confirmed(path, wake, stop, window):
                return "gone"
            continue
        if answered():
            return "answered"
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            return "timeout"
        wait = watch.timeout_hint
        if deadline is not None:
            wait = min(wait, deadline - now)
        wake.wait(wait)
