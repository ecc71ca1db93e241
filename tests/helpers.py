"""Helpers shared by the tests: the installed loopkit, a clean environment, read-only mounts,
the request commands, a supervised loop's workspace, a phone pointed at the fake Bot API."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from fakeserver import FakeServer

LOOPKIT = Path(sys.executable).parent / "loopkit"


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any LOOPKIT_* setting but the test's own
    ``LOOPKIT_HOME``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    if os.environ.get("LOOPKIT_HOME"):
        env["LOOPKIT_HOME"] = os.environ["LOOPKIT_HOME"]
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


def lk(ws: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``loopkit -C ws ARGS…``."""
    return loopkit("-C", str(ws), *args, env=env)


# --- ask, reply, unblock, gate: requests through the command line --------------------------

POLICY = "Escalate anything irreversible; proceed on routine refactors."

ESCALATE = ["escalate", "-q", "Which flow?", "-c", "checkout", "-a", "read PROMPT.md",
            "--choice", "Flow A — old API", "--choice", "Flow B — migration"]  # fmt: skip


def ask(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), "ask", "--policy", POLICY, *args, env=env)


def ask_json(ws: Path, *args: str) -> dict[str, object]:
    done = ask(ws, *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def gate(ws: Path, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), "gate", "--", *command, cwd=cwd or ws)


def record(ws: Path, request_id: str) -> dict[str, object]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def files(ws: Path) -> list[Path]:
    return sorted((ws / "requests").glob("*.json")) if (ws / "requests").exists() else []


# --- loopkit run: a loop whose agent and verify are small shell scripts --------------------

# The agents' log of their runs lives beside the workspace, not in it: it is the test's
# instrument, not the agent's work (a line logged is no progress, SPEC §25) — runs_file().
AGENT = (
    'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}|${LOOPKIT_TASK-}"'
    ' >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
)
VERIFY_FAILS = (
    'echo "collected 3 items"\necho "FAILED test_price.py - AssertionError: boom"\nexit 1\n'
)


def setup(ws: Path, extra: str = "", agent: str = AGENT, verify: str = VERIFY_FAILS) -> None:
    """A loop running agent.sh then verify.sh (which fails); ``extra`` lines override."""
    (ws / "agent.sh").write_text(agent)
    (ws / "verify.sh").write_text(verify)
    base = [
        'agent = ["/bin/sh", "agent.sh"]',
        'verify = ["/bin/sh", "verify.sh"]',
        'pause = "0s"',
        'iteration_timeout = "30s"',
        'kill_grace = "2s"',
    ]
    overridden = {line.split("=")[0].strip() for line in extra.splitlines() if "=" in line}
    kept = [line for line in base if line.split("=")[0].strip() not in overridden]
    write_config(ws, "[loop]\n" + "\n".join(kept) + "\n" + extra + "\n")


def runs_file(ws: Path) -> Path:
    """Where the tests' agents log their runs: ``<workspace>.runs.txt``, beside it."""
    real = ws.resolve()
    return real.with_name(f"{real.name}.runs.txt")


def runs(ws: Path) -> list[list[str]]:
    """The agent's runs, as AGENT logs them: [iteration, decision, task]."""
    path = runs_file(ws)
    return [line.split("|") for line in path.read_text().splitlines()] if path.exists() else []


def records(ws: Path) -> list[dict[str, object]]:
    """Every request record, oldest first."""
    found = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    return sorted(found, key=lambda r: (str(r["created_at"]), int(r.get("iteration") or 0)))  # type: ignore[call-overload]


class Calendar:
    """A clock only the test moves (:class:`loopkit.clock.Clock`): the wall-clock time a
    poller and the fake Bot API share, so a week of quiet is simulated, never waited. A wait
    returns at once — True if its event is set, else False with the time moved on."""

    def __init__(self, wall: datetime | None = None) -> None:
        self.wall = wall or datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
        self.elapsed = 0.0

    def monotonic(self) -> float:
        return 5000.0 + self.elapsed

    def now(self) -> datetime:
        return self.wall + timedelta(seconds=self.elapsed)

    def advance(self, delta: timedelta) -> None:
        self.elapsed += delta.total_seconds()

    def wait(self, event: Any, seconds: float | None) -> bool:
        if event.wait(0):
            return True
        assert seconds is not None, "a wait without end on a clock only the test moves"
        self.elapsed += seconds
        return bool(event.wait(0))


# --- the phone: the telegram channel, pointed at the fake Bot API ---------------------------

PHONE_TOKEN = "777777:AAPhoneTestTokenNotARealOne_abcd"
PHONE_CHAT = 5151


def phone_env(server: FakeServer, **extra: str) -> dict[str, str]:
    return clean_env(
        LOOPKIT_HITL_TELEGRAM_TOKEN=PHONE_TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT=str(PHONE_CHAT),
        LOOPKIT_HITL_TELEGRAM_API=server.url,
        **extra,
    )


def offset_file(token: str) -> Path:
    """Where loopkit keeps a bot's update offset: one per bot, in the test's LOOPKIT_HOME."""
    return Path(os.environ["LOOPKIT_HOME"]) / "telegram" / f"{token.split(':')[0]}.json"


def relay_for(config: Any, **options: Any) -> Any:
    """The Telegram relay as ``loopkit run`` assembles it for ``config``'s workspace: its
    store (with the hub its Config names) first, every registered workspace's after."""
    from loopkit.fleet import Hubs
    from loopkit.inbox.relay.poller import UpdatePoller
    from loopkit.requests.locate import Stores
    from loopkit.requests.store import RequestStore
    from loopkit.workspace import Workspace

    hubs = Hubs()
    store = RequestStore(Workspace.of(config), hub=hubs.for_config(config))
    stores = Stores(hubs.for_config)
    stores.add(config, store)
    return UpdatePoller.relay(config.channels, hubs=hubs, stores=stores, here=store, **options)


class Browser:
    """A synchronous client of the ASGI app that keeps its cookies, as a browser would."""

    def __init__(self, asgi: Any) -> None:
        self.transport = httpx.ASGITransport(app=asgi, client=("203.0.113.9", 50000))
        self.cookies = httpx.Cookies()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        follow = kwargs.pop("follow_redirects", True)

        async def go() -> httpx.Response:
            async with httpx.AsyncClient(
                transport=self.transport, base_url="http://127.0.0.1", cookies=self.cookies,
                follow_redirects=follow,
            ) as client:  # fmt: skip
                response = await client.request(method, path, **kwargs)
                self.cookies.update(client.cookies)
                return response

        return asyncio.run(go())

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)


class Crash(BaseException):
    """The process dies here: nothing after it runs, nothing catches it."""


class CrashAtSave:
    """A bot's offsets as the poller has them, but the process dies saving the offset:
    after the update was applied, before Telegram (and the fleet) are told to move past it."""

    def __init__(self, offsets: Any) -> None:
        self.offsets = offsets
        self.bot = offsets.bot

    def __getattr__(self, name: str) -> Any:
        return getattr(self.offsets, name)

    def save(self, position: Any) -> None:
        raise Crash


# An agent that logs each run as "<iteration>|<guidance>" (runs_file), then waits until the
# test opens its gate (a FIFO named ``gate``): a loop held mid-iteration on the test's word.
GATED_AGENT = (
    'echo "$LOOPKIT_ITERATION|${LOOPKIT_GUIDANCE-}" >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
    "read line < gate\n"
)


def open_gate(ws: Path) -> None:
    """Let the :data:`GATED_AGENT` waiting on its gate go on (once it reads it)."""

    def opened() -> int | None:
        try:
            return os.open(ws / "gate", os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no reader yet
                return None
            raise

    fd = wait_until(opened, what="the agent to wait on its gate")
    assert isinstance(fd, int)
    os.write(fd, b"go\n")
    os.close(fd)


def gated_runs(ws: Path) -> list[str]:
    """The :data:`GATED_AGENT`'s runs so far, one "<iteration>|<guidance>" line each."""
    path = runs_file(ws)
    return path.read_text().splitlines() if path.exists() else []


def cgroups_or_skip() -> Path:
    """The cgroup v2 folder this process may make cgroups in, else a loud skip: the cgroup
    path (containment, prepared processes) goes untested on a machine without one."""
    import pytest

    from loopkit.supervisor import cgroup

    parent = cgroup.parent()
    if parent is None:
        pytest.skip(
            "NO WRITABLE CGROUP V2 HERE (no cgroup2 mount, or no 0:: line): cgroup path untested"
        )
    probe = parent / f"loopkit-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as exc:
        pytest.skip(f"NO WRITABLE CGROUP V2 HERE ({parent}: {exc.strerror}): cgroup path untested")
    probe.rmdir()
    return parent
