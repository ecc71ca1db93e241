"""The Linux ``prctl`` settings loopkit uses, through ctypes; a no-op where there are none.

- ``PR_SET_CHILD_SUBREAPER``: orphans among our descendants (double forks) are re-parented
  to us instead of to init, so the supervisor can still find, stop and reap them.
- ``PR_SET_PDEATHSIG``: a child gets a signal when the *thread* that forked it exits.
- ``PR_SET_NAME``: the calling thread's name (``/proc/<pid>/task/<tid>/comm``), which only
  its own process can change: the supervisor's mark for :mod:`loopkit.agentsession`.

Every call reports failure by its result and never raises: containment is best effort on
top of the process group, and an old kernel or another OS must not stop a run.
"""

from __future__ import annotations

import functools
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_GET_NAME = 16
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


@functools.cache
def _function() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up once (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # here: only a supervisor or a dial needs it

    try:  # the interpreter's own symbols hold libc's (find_library would run ldconfig)
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong,  # type: ignore[attr-defined]
                         ctypes.c_ulong, ctypes.c_ulong]  # fmt: skip
    function.restype = ctypes.c_int  # type: ignore[attr-defined]
    return function


def child_subreaper() -> bool:
    """Whether this process is a child subreaper now."""
    function = _function()
    if function is None:
        return False
    import ctypes

    value = ctypes.c_int(0)
    if function(PR_GET_CHILD_SUBREAPER, ctypes.addressof(value), 0, 0, 0) != 0:
        return False
    return bool(value.value)


def set_child_subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or stop being one); True when it took."""
    function = _function()
    return function is not None and function(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0


def thread_name() -> str | None:
    """The calling thread's name, or None."""
    function = _function()
    if function is None:
        return None
    import ctypes

    buffer = ctypes.create_string_buffer(16)
    if function(PR_GET_NAME, ctypes.addressof(buffer), 0, 0, 0) != 0:
        return None
    return buffer.value.decode(errors="replace")


def set_thread_name(name: str) -> bool:
    """Name the calling thread (at most 15 bytes kept); True when it took."""
    function = _function()
    if function is None:
        return False
    import ctypes

    buffer = ctypes.create_string_buffer(name.encode()[:15])
    return function(PR_SET_NAME, ctypes.addressof(buffer), 0, 0, 0) == 0


def pdeathsig(sig: signal.Signals) -> Callable[[], None] | None:
    """A ``preexec_fn`` that gives the child ``sig`` when its parent thread exits, or None.

    Everything is resolved here, in the parent: in the child, between fork and exec, it
    only calls the C function and ``getppid``. If the parent died before the setting took,
    the child exits at once (the signal would never come).
    """
    function = _function()
    if function is None:
        return None
    parent = os.getpid()
    number = int(sig)

    def preexec() -> None:
        function(PR_SET_PDEATHSIG, number, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return preexec
