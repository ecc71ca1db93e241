"""Helpers shared by the tests: the installed loopkit, a clean environment, read-only mounts."""

from __future__ import annotations

import contextlib
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


class Daemon:
    """``loopkit run`` in the background, in its own session, output to files."""

    def __init__(self, ws: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.ws = ws
        self.out = ws.parent / f"daemon-{time.monotonic_ns()}.out"
        self.err = self.out.with_suffix(".err")
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.proc = subprocess.Popen(
                [str(LOOPKIT), "-C", str(ws), "run", *args],
                env=env if env is not None else clean_env(),
                stdout=out,
                stderr=err,
                start_new_session=True,
            )

    def state(self) -> dict[str, object]:
        import json

        try:
            data = json.loads((self.ws / ".loopkit" / "state.json").read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def wait_state(self, timeout: float = 20.0, **expected: object) -> dict[str, object]:
        def matches() -> dict[str, object] | None:
            state = self.state()
            ok = all(state.get(k) == v for k, v in expected.items())
            return state if ok and state.get("pid") == self.proc.pid else None

        found = wait_until(matches, timeout, f"state {expected}; stderr: {self.stderr()[-500:]}")
        assert isinstance(found, dict)
        return found

    def stderr(self) -> str:
        return self.err.read_text(errors="replace") if self.err.exists() else ""

    def stdout(self) -> str:
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def wait(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def __enter__(self) -> Daemon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def write_config(ws: Path, text: str) -> None:
    (ws / "loopkit.toml").write_text(text)
