from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit.supervisor import cgroup, procs

from fakeserver import FakeServer


@pytest.fixture(autouse=True, scope="session")
def _no_cgroups_left() -> Iterator[None]:
    """A test that ends its supervisor with SIGKILL leaves the cgroup of the command it ran
    (the next ``loopkit run`` in that workspace would remove it; there is none): at the end,
    the empty ``loopkit-…-<pid>`` cgroups of supervisors that are gone are removed."""
    yield
    parent = cgroup.parent()
    for folder in parent.glob("loopkit-*-*") if parent else []:
        pid = folder.name.rsplit("-", 1)[1]
        if pid.isdigit() and not procs.running(int(pid)):
            with contextlib.suppress(OSError):
                folder.rmdir()


@pytest.fixture(autouse=True)
def _no_loopkit_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No LOOPKIT_* from the developer's shell; a loopkit home of the test's own, so no test
    registers a workspace in the real ~/.local/state/loopkit."""
    for key in list(os.environ):
        if key.startswith("LOOPKIT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("LOOPKIT_HOME", str(tmp_path / "loopkit-home"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer().start()
    try:
        yield fake
    finally:
        fake.close()
