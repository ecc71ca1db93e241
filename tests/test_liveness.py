"""A recorded supervisor is alive only while its pid names the process that started then:
a pid reused by another process, or a zombie, is not it (``loopkit ps`` says dead)."""

from __future__ import annotations

import os
import subprocess
import sys

from loopkit.liveness import alive, start_ticks


def test_a_pid_is_alive_only_with_its_own_start_time() -> None:
    me = start_ticks(os.getpid())
    assert me is not None
    assert alive(os.getpid(), me) and alive(os.getpid(), None)
    assert not alive(os.getpid(), me + 1)  # the same pid, another process's start: reused
    assert not alive(None, None) and not alive(0, None) and not alive(-1, None)


def test_an_exited_child_is_not_alive_even_before_it_is_reaped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = start_ticks(child.pid)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left a zombie
    assert started is None or not alive(child.pid, started)
    child.wait()
    assert not alive(child.pid, started)
