"""Waiting on the file system: one deadline loop, and "until BLOCKED.md is gone".

:func:`wait_until` is the one loop every wait in loopkit runs: look, and if nothing is
found, sleep on the wake-up until a watched folder changes (or the watch's safety interval,
or the deadline). :func:`wait_unblock` is the supervisor's wait while blocked, built on it.

"Gone" means the workspace folder exists and nothing is at the block path for a short
confirmation window. Editors that save by renaming the original away and writing a new
file (vim with ``backupcopy=no``, JetBrains "safe write") leave the path empty for a few
milliseconds; the window makes sure such a save is never taken for an unblock. A folder
at the block path is not "gone" either: the loop stays blocked until it is removed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from loopkit.clock import Clock, SystemClock
from loopkit.watch.folder import FolderWatch
from loopkit.watch.wake import Waker

CONFIRM_WINDOW = 0.008  # seconds; SPEC: absence is confirmed over ≤ 10 ms
Outcome = Literal["gone", "answered", "stopped", "timeout"]
T = TypeVar("T")


def wait_until(
    look: Callable[[], T | None],
    watch: FolderWatch,
    wake: Waker,
    *,
    deadline: float | None,
    clock: Clock | None = None,
) -> T | None:
    """``look()``'s first value that is not None, or None once ``deadline`` (a
    ``clock.monotonic()`` value; the system clock by default) has passed. ``look`` runs at
    once, after every change in a watched folder and at least every ``watch.timeout_hint``
    seconds; ``wake`` is the watch's wake-up (a stop sets it too, and ``look`` says what a
    stop means)."""
    clock = clock or SystemClock()
    while True:
        wake.clear()
        watch.ensure()
        found = look()
        if found is not None:
            return found
        now = clock.monotonic()
        if deadline is not None and now >= deadline:
            return None
        wait = watch.timeout_hint
        if deadline is not None:
            wait = min(wait, deadline - now)
        clock.wait(wake, wait)


def is_gone(path: Path) -> bool:
    return path.parent.is_dir() and not os.path.lexists(path)


def _confirmed(path: Path, wake: Waker, stop: threading.Event, window: float, clock: Clock) -> bool:
    end = clock.monotonic() + window
    while True:
        wake.clear()
        if not is_gone(path):
            return False
        remaining = end - clock.monotonic()
        if remaining <= 0 or stop.is_set():
            return not stop.is_set()
        clock.wait(wake, remaining)


def wait_unblock(
    path: Path,
    watch: FolderWatch,
    wake: Waker,
    stop: threading.Event,
    *,
    deadline: float | None,
    answered: Callable[[], bool] = lambda: False,
    window: float = CONFIRM_WINDOW,
    clock: Clock | None = None,
) -> Outcome:
    """Until ``path`` is gone (confirmed over ``window``), ``answered()``, a stop, or the
    deadline (a ``clock.monotonic()`` value) — whichever comes first, looked at in that order."""
    clock = clock or SystemClock()

    def look() -> Outcome | None:
        if stop.is_set():
            return "stopped"
        if is_gone(path) and _confirmed(path, wake, stop, window, clock):
            return "gone"
        if stop.is_set():
            return "stopped"
        return "answered" if answered() else None

    return wait_until(look, watch, wake, deadline=deadline, clock=clock) or "timeout"
