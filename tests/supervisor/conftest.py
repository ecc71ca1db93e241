from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest


@pytest.fixture
def no_subprocesses(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any process started during the test fails it: in process means in process."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args[1:3]}")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    for name in ("posix_spawn", "posix_spawnp", "fork", "forkpty", "execv", "execve"):
        monkeypatch.setattr(os, name, refuse)
    yield
