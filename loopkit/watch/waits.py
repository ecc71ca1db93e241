"""Waiting on the file system: one deadline loop, and "until BLOCKED.md is gone".

:func:`wait_until` is the one loop every wait in loopkit runs: look, and if nothing is
found, sleep on the wake-up until a watched folder changes (or the watch's safety interval,
or the deadline). :func:`wait_unblock` is the supervisor's wait while blocked, built on it.

"Gone" means the workspace folder exists and nothing is at the block path for a short
confirmation window. Editors that save by moving the original away and writing a new file
leave the path empty for a moment, and the window makes sure such a save is never taken for
an unblock. How long depends on how the file went, as the folder watch tells it (a rename's
two inotify events paired by their cookie):

- renamed to another name in the folder (vim's and Emacs's default backup, JetBrains "safe
  write"), deleted (vim with ``backupdir`` on another file system: copy, delete, write anew —
  up to ~5 ms apart, measured), or no event seen: :data:`CONFIRM_WINDOW`;
- moved out of the folder (``mv BLOCKED.md done/``): :data:`MOVED_OUT_WINDOW`. The one editor
  save that looks like it (vim or Emacs with the backup folder elsewhere on the same file
  system) writes the new file straight after its ``rename`` — ≤ 0.05 ms apart, measured.

A folder at the block path is not "gone" either: the loop stays blocked until it is removed.
"""

from __future__ import annotations

import os
from typing import Literal, TypeVar

from loopkit.clock import SystemClock

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from pathlib import Path

    from loopkit.clock import Clock
    from loopkit.watch.folder import FolderWatch
    from loopkit.watch.wake import Waker

CONFIRM_WINDOW = 0.008  # seconds; SPEC: absence is confirmed over ≤ 10 ms
MOVED_OUT_WINDOW = 0.002  # seconds; BLOCKED.md moved out of the folder (no paired MOVED_TO)
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


def _confirmed(
    path: Path, watch: FolderWatch, wake: Waker, stop: threading.Event, window: float, clock: Clock
) -> bool:
    start = clock.monotonic()
    while True:
        wake.clear()
        if not is_gone(path):
            return False
        # Asked again each time round: a late IN_MOVED_TO turns "moved out" into "renamed".
        moved_out = watch.vanished(path) == "moved_out"
        needed = min(window, MOVED_OUT_WINDOW) if moved_out else window
        remaining = start + needed - clock.monotonic()
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
    """Until ``path`` is gone (confirmed over ``window``, or :data:`MOVED_OUT_WINDOW` when the
    watch saw it moved out of the folder), ``answered()``, a stop, or the
    deadline (a ``clock.monotonic()`` value) — whichever comes first; a stop is looked at
    first, then an answer, then the file."""
    clock = clock or SystemClock()
    watch.follow(path)

    def look() -> Outcome | None:
        if stop.is_set():
            return "stopped"
        if answered():  # an answer lifts its block itself: nothing to confirm
            return "answered"
        if is_gone(path) and _confirmed(path, watch, wake, stop, window, clock):
            return "gone"
        return "stopped" if stop.is_set() else None

    return wait_until(look, watch, wake, deadline=deadline, clock=clock) or "timeout"
