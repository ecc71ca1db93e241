"""Is a recorded process still the one that was recorded? (``loopkit ps``, SPEC section 22.)

A process is known by its pid *and* its start time (field 22 of ``/proc/<pid>/stat``, clock
ticks after boot): a pid is reused, the pair is not. Reading it takes no lock, so asking
about fifty loops every second (the inbox's Loops page) never gets in a supervisor's way —
unlike probing its ``flock``, which a supervisor starting at that instant would find taken.
"""

from __future__ import annotations

import os


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), or None when there is no such process
    or it has exited (a zombie waits only to be reaped)."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        fields = data[data.rindex(b")") + 2 :].split()
        if fields[0] in (b"Z", b"X"):
            return None
        return int(fields[19])
    except (ValueError, IndexError):
        return None


def alive(pid: int | None, start: int | None) -> bool:
    """``pid`` runs and, when ``start`` is known, is the process that started then."""
    if not pid or pid <= 0:
        return False
    ticks = start_ticks(pid)
    return ticks is not None and (start is None or ticks == start)
