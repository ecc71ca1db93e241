"""Helpers shared by the tests: the installed loopkit, a clean environment, read-only mounts."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

LOOPKIT = Path(sys.executable).parent / "loopkit"


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any LOOPKIT_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(extra)
    return env


def loopkit(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 60,
    prefix: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``loopkit`` console script."""
    assert LOOPKIT.exists(), f"loopkit is not installed in {LOOPKIT.parent}; pip install -e ."
    return subprocess.run(
        [*(prefix or []), str(LOOPKIT), *args],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def read_only_prefix(path: Path) -> list[str]:
    """A command prefix that runs the command with ``path`` mounted read-only.

    As root, permissions do not stop writes, so a private mount namespace (``unshare -m``)
    bind-mounts the folder read-only for that one command; otherwise ``chmod`` does it.
    """
    if os.geteuid() != 0:
        path.chmod(0o555)
        return []
    script = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(path)]


def wait_until(condition: Callable[[], object], timeout: float = 10.0, what: str = "") -> object:
    """Poll ``condition`` until it is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        time.sleep(0.005)
