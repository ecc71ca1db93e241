"""``Wake``: a ``threading.Event`` that also has a file descriptor.

The supervisor waits on one wake-up for everything: a signal (its handler only calls
``set``), a folder change (set from watchdog's thread), a child's output or exit. Because
``Wake`` is readable through :meth:`Wake.fileno` while set, the main thread can ``select`` on it
together with a child's output pipe and its ``pidfd`` — no helper threads per command.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from typing import Protocol


class Waker(Protocol):
    """What waiting code needs of a wake-up; ``threading.Event`` and :class:`Wake` have it."""

    def set(self) -> None: ...

    def clear(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class Wake:
    def __init__(self) -> None:
        self._flag = threading.Event()
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def fileno(self) -> int:
        return self._read

    def is_set(self) -> bool:
        return self._flag.is_set()

    def set(self) -> None:
        """Safe from any thread and from a signal handler."""
        if not self._flag.is_set():
            self._flag.set()
            with contextlib.suppress(BlockingIOError, OSError):
                os.write(self._write, b"!")

    def clear(self) -> None:
        # Flag first, then drain: a set() in between leaves the flag set, so no wake is lost.
        self._flag.clear()
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self._read, 512):
                pass

    def wait(self, timeout: float | None = None) -> bool:
        if self._flag.is_set():
            return True
        if timeout is not None and timeout <= 0:
            return False
        with contextlib.suppress(InterruptedError):
            select.select([self._read], [], [], timeout)
        return self._flag.is_set()

    def close(self) -> None:
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
