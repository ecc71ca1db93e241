"""Waiting on the file system: one deadline loop, and "until BLOCKED.md is gone".

:func:`wait_until` is the one loop every wait in loopkit runs: look, and if nothing is
found, sleep on the wake-up until a watched folder changes (or the watch's safety interval,
or the deadline). :func:`wait_unblock` is the supervisor's wait while blocked, built on it.

"Gone" is decided by what happened to the file, never by how long it has been absent
(SPEC §27): editors save by moving the original away and writing a new one, and a window of
milliseconds is a bet a loaded machine loses. With the folder watched (inotify):

- the absence is explained first: until the watch has read the event that took the file
  away, nothing is decided (events come in order: whatever an editor did before is read by
  then too);
- **renamed inside the folder** — its inode is there under another name (vim's
  ``BLOCKED.md~``, JetBrains' ``___jb_old___``, Emacs's backup) — is never an unblock: the
  wait goes on until the name comes back, for as long as that takes;
- **an editor at work** on it — its swap or lock file beside it, or a probe it made in the
  folder since the file was last there (vim's ``4913`` before it copies and deletes) — is a
  save in progress: the wait goes on until the name comes back, or the editor is gone;
- otherwise a **deletion** (``rm``) or a **move out of the folder** (``mv BLOCKED.md
  done/``) is an unblock, at once.

Without inotify (polling, or events lost) the old rule stands: absent for
:data:`CONFIRM_WINDOW` (:data:`MOVED_OUT_WINDOW` when the watch saw it moved out).
A folder at the block path is not "gone" either: the loop stays blocked until it is removed.
"""

from __future__ import annotations

import os
import time
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

CONFIRM_WINDOW = 0.008  # seconds, without inotify: absence is confirmed over ≤ 10 ms
MOVED_OUT_WINDOW = 0.002  # seconds, without inotify: moved out of the folder (no MOVED_TO)
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
    """Whether ``path``'s absence is an unblock (see the module). False: not (yet) — the
    caller looks again at the next change in the folder."""
    if watch.mode == "inotify" and watch.ever_seen(path):
        return _gone_by_event(path, watch, wake, stop)
    return _gone_by_window(path, watch, wake, stop, window, clock)


def _gone_by_event(path: Path, watch: FolderWatch, wake: Waker, stop: threading.Event) -> bool:
    # The event comes from the watch's reader thread: it is waited for in real time (the
    # loop's clock may be a test's), at most the watch's safety interval — a lost event.
    until = time.monotonic() + watch.timeout_hint
    while watch.vanished(path) is None:  # the event that took it away is not read yet
        if not is_gone(path) or stop.is_set():
            return False
        left = until - time.monotonic()
        if left <= 0:
            break  # no event: lost (an overflow); the folder itself decides
        wake.clear()
        wake.wait(min(left, 0.05))
    if not is_gone(path) or stop.is_set() or not watch.same_folder(path):
        return False  # a folder swapped for another: looked at again once the watch re-arms
    return not (watch.renamed_within(path) or watch.editing(path))


def _gone_by_window(
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
        if not is_gone(path):
            watch.seen(path)  # its inode now: a later rename inside the folder is found
            return None
        if _confirmed(path, watch, wake, stop, window, clock):
            return "gone"
        return "stopped" if stop.is_set() else None

    return wait_until(look, watch, wake, deadline=deadline, clock=clock) or "timeout"
