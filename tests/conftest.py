from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeserver import FakeServer


@pytest.fixture(autouse=True)
def _no_loopkit_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("LOOPKIT_"):
            monkeypatch.delenv(key)


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
