from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit.supervisor import cgroup
from loopkit.supervisor import procfs as procs
from loopkit.supervisor.cgroup import Cgroup
from loopkit.supervisor.containment import Containment, label
from loopkit.supervisor.leftovers import stop_left_behind

from fakentfy import FakeNtfy
from fakepagerduty import TEST_KEY, FakePagerDuty
from fakeserver import FakeServer


@pytest.fixture(autouse=True, scope="session")
def _nothing_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test that ends its supervisor with SIGKILL (``Daemon.stop``) leaves the command it
    ran, and its cgroup; the next ``loopkit run`` there would stop them, but none comes. At
    the end of the session they are stopped as that run would (this session's only)."""
    yield
    for record in tmp_path_factory.getbasetemp().glob("**/.loopkit/running.json"):
        workspace = record.parent.parent
        stop_left_behind(Containment(record=record, name=label(workspace)), grace=0)
    # A concurrent pytest of the same user may have pruned this session's folders: an empty
    # cgroup of a supervisor that is gone is garbage, whoever's it was.
    parent = cgroup.parent()
    for folder in parent.glob("loopkit-*-*") if parent else []:
        pid = folder.name.rsplit("-", 1)[1].split(".")[0]  # loopkit-<workspace>-<pid>.<n>
        if pid.isdigit() and not procs.running(int(pid)) and not Cgroup(folder).pids():
            Cgroup(folder).remove()


@pytest.fixture(autouse=True)
def _no_loopkit_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No LOOPKIT_* from the developer's shell; a loopkit home of the test's own, so no test
    registers a workspace in the real ~/.local/state/loopkit."""
    for key in list(os.environ):
        if key.startswith("LOOPKIT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("LOOPKIT_HOME", str(tmp_path / "loopkit-home"))
    # The agents' own user files (Codex's config and trust, Gemini CLI's trusted folders)
    # where each CLI reads them from its variable: `init --agent …` writes there, never in
    # the developer's home.
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", str(tmp_path / "gemini-trusted.json"))


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


@pytest.fixture
def ntfy() -> Iterator[FakeNtfy]:
    fake = FakeNtfy().start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def pagerduty() -> Iterator[FakePagerDuty]:
    fake = FakePagerDuty(TEST_KEY).start()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[object]:
    """A PostgreSQL server for the whole session (the fleet tests): loud skip where none
    can be had, a failure on CI (which installs it)."""
    sys.path.insert(0, str(Path(__file__).parent / "fleet"))
    from pgserver import PgServer, binaries

    if binaries() is None:
        if os.environ.get("CI"):
            raise RuntimeError("no PostgreSQL server binaries: .ci/run installs postgresql")
        pytest.skip("LOUD SKIP: no PostgreSQL server here (apt-get install postgresql)")
    server = PgServer()
    server.start()
    yield server
    server.stop(remove=True)


@pytest.fixture
def strays() -> Iterator[list[int]]:
    """Pids a test's commands started: any still running at the end is killed (by pid)."""
    import signal

    from loopkit.supervisor import procfs as procs

    pids: list[int] = []
    yield pids
    procs.send([p for p in pids if procs.running(p)], signal.SIGKILL)
