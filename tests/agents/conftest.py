"""The real agents' CLIs, each against a fake of its model API on 127.0.0.1 (SPEC §23).

The CLIs are installed from the npm registry at pinned versions (:mod:`install`); a
machine without npm skips these tests loudly — except on CI (``CI`` set), where ``.ci/run``
installs node and npm first, and a missing one is a failure.

Every CLI runs with a home of the test's own (its settings, sessions and trust live
there), every update check and telemetry off, and the proxy variables pointing at a port on
127.0.0.1 that refuses connections, with only 127.0.0.1 exempt: whatever a CLI would fetch
from elsewhere fails at once on this machine, and its model API is the fake.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from install import Missing, installed


@pytest.fixture(scope="session")
def refusing_port() -> Iterator[int]:
    """A port on 127.0.0.1 bound and never listened on: a connection to it is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def cli(agent: str) -> Path:
    try:
        return installed(agent)
    except Missing as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"LOUD SKIP: {exc}")


@pytest.fixture(scope="session")
def claude_cli() -> Path:
    return cli("claude")


@pytest.fixture(scope="session")
def codex_cli() -> Path:
    return cli("codex")


@pytest.fixture(scope="session")
def gemini_cli() -> Path:
    return cli("gemini")
