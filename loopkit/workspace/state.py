"""The supervisor's state (``.loopkit/state.json``) and its one-per-workspace lock.

State is written atomically after every change that matters (iteration start, counters,
block, unblock), so a supervisor killed with ``kill -9`` and restarted carries on with the
same counters and knows which block it had already announced. Fields this code does not
know survive a rewrite.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from enum import StrEnum

from loopkit import atomicfile, clock, readfile
from loopkit.datarecord import asdict, field, fields, record
from loopkit.errors import AlreadyRunning, WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from loopkit.workspace import Workspace

SCHEMA_VERSION = 1


class LoopStatus(StrEnum):
    """What ``state.json`` says of the loop (``loopkit status``; ``ps`` adds ``dead`` for a
    supervisor that is gone)."""

    IDLE = "idle"  # no supervisor yet, or stopped by --max-iterations
    RUNNING = "running"
    BLOCKED = "blocked"
    PAUSED = "paused"
    FINISHED = "finished"  # done said so
    ABORTED = "aborted"
    STOPPED = "stopped"


ALIVE = (LoopStatus.RUNNING, LoopStatus.BLOCKED, LoopStatus.PAUSED)  # a supervisor runs


@record(slots=True)
class State:
    status: LoopStatus = LoopStatus.IDLE
    pid: int | None = None
    pid_start: int | None = None  # the supervisor's start (clock ticks): a pid is reused
    started_at: str | None = None
    updated_at: str | None = None
    iteration: int = 0
    task: str | None = None
    task_base: str | None = None  # the git commit when ``task`` started: the question's diff
    failures: int = 0  # consecutive failures on ``task``
    failed_iterations: list[dict[str, Any]] = field(default_factory=list)
    open_request: str | None = None
    # Every human decision for the next agent run, oldest first; consumed (cleared) at its
    # start. (An older supervisor kept one, as ``pending_decision``: read as a list of it.)
    pending_decisions: list[dict[str, Any]] = field(default_factory=list)
    last_exit: int | None = None
    last_verify: dict[str, Any] | None = None  # {"ok", "line" (its first), "at"}: for ps
    # Requests written before this (time.time_ns()) were looked at for answers given while
    # no supervisor waited: a start reads only the records written since.
    answers_seen_ns: int = 0
    # The stuck detector's counters (SPEC section 19; loopkit.supervisor.stuck.Counters).
    stuck: dict[str, Any] = field(default_factory=dict)
    # Dollars the agent's runs reported spending (Claude's cost, Codex's and Gemini's tokens
    # priced), summed over the loop's life; None until one reported any: `ps` shows it.
    spend_usd: float | None = None
    # The agent's own session (SPEC section 18): the id its last result named, that result
    # (loopkit.agentresult: is_error, subtype, total_cost_usd, permission_denials, …), the
    # last resume after an answer (session, resumed or why not), and a dependency that is
    # down (the agent's API rate-limited: since when, how many tries).
    agent_session: str | None = None
    agent_result: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    dependency_down: dict[str, Any] | None = None
    schema_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "extra"}
        data["status"] = str(self.status)  # the value (a StrEnum's str)
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> State:
        data = dict(data)
        one = data.pop("pending_decision", None)
        if isinstance(one, dict) and "pending_decisions" not in data:
            data["pending_decisions"] = [one]
        known = {f.name for f in fields(cls)} - {"extra"}
        values = {k: v for k, v in data.items() if k in known}
        if "status" in values:  # a state this version does not know reads as idle
            status = values["status"]
            known_status = status in LoopStatus._value2member_map_
            values["status"] = LoopStatus(status) if known_status else LoopStatus.IDLE
        state = cls(**values)
        state.extra = {k: v for k, v in data.items() if k not in known}
        return state


class StateFile:
    def __init__(self, workspace: Workspace) -> None:
        self.path = workspace.state_dir / "state.json"

    def load(self) -> State:
        try:
            data = readfile.json_document(readfile.read_text(self.path))
        except FileNotFoundError:
            return State()
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise WorkspaceError(
                f"{self.path}: unreadable ({reason}); move it aside to start with fresh counters"
            ) from None
        if not isinstance(data, dict):
            raise WorkspaceError(f"{self.path}: not a JSON object; move it aside")
        try:
            return State.from_dict(data)
        except TypeError as exc:
            raise WorkspaceError(
                f"{self.path}: unexpected content ({exc}); move it aside"
            ) from None

    def save(self, state: State, *, durable: bool = True) -> None:
        """Write the state atomically; ``durable=False`` for mere progress (no fsync)."""
        state.updated_at = clock.iso_millis()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.write_json(self.path, state.to_dict(), mode=0o600, durable=durable)
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, self.path)) from None


class SupervisorLock:
    """``flock`` on ``.loopkit/locks/supervisor.lock``; the holder's pid is written inside.

    The kernel drops the lock when the holder dies, even by ``kill -9``, so a stale lock
    never blocks a restart.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.path = workspace.locks_dir / "supervisor.lock"
        self._fd: int | None = None

    def holder(self) -> int | None:
        """The pid of the supervisor holding the lock, or None when nobody holds it."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                text = os.pread(fd, 32, 0).decode(errors="replace").strip()
                return int(text) if text.isdigit() else -1
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create {self.path}: {exc.strerror}; make the workspace writable"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise WorkspaceError(f"cannot lock {self.path}: {exc.strerror}") from None
            who = f"pid {text}" if text.isdigit() else "another process"
            raise AlreadyRunning(
                f"a supervisor is already running in {self.path.parent.parent.parent} ({who}); "
                "stop it first, or use `loopkit status`"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()
