"""What the fleet tests share: a fresh database with the fleet's tables, per test."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from helpers import LOOPKIT, clean_env


@pytest.fixture
def dsn(pg_server: Any) -> str:
    """A new database on the session's PostgreSQL server, made ready by `loopkit fleet init`."""
    url = str(pg_server.new_database())
    done = subprocess.run(
        [str(LOOPKIT), "fleet", "init"],
        capture_output=True, text=True, env=clean_env(LOOPKIT_FLEET_DSN=url), timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return url
