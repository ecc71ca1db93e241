"""The tasks the loop passes over (``.loopkit/skipped.json``): *Skip the task* — a human's
answer, or a ``skip`` timeout — adds one; ``loopkit unskip TASK`` takes one back.

Kept apart from ``state.json`` on purpose: that file is the supervisor's alone, rewritten
from its memory at every step, so an ``unskip`` written there while a supervisor runs would
be lost at its next save. Here the supervisor and ``unskip`` each change the list by one
locked read-modify-write (``.loopkit/locks/skipped.lock``), atomically written, and the
supervisor reads it afresh whenever it picks the task.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from loopkit import atomicfile, readfile
from loopkit.datarecord import record
from loopkit.errors import TaskNotFound, WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from loopkit.workspace import Workspace

SCHEMA_VERSION = 1


@record(frozen=True, slots=True)
class Skipped:
    """One skipped task: when, and the request whose answer (or timeout) skipped it."""

    task: str
    skipped_at: str | None = None
    request_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "skipped_at": self.skipped_at, "request_id": self.request_id}


class SkippedTasks:
    def __init__(self, workspace: Workspace) -> None:
        self.path = workspace.state_dir / "skipped.json"
        self._lock = workspace.locks_dir / "skipped.lock"

    def load(self) -> list[Skipped]:
        """The skipped tasks, in the order they were skipped (none: no file yet)."""
        try:
            data = readfile.json_document(readfile.read_text(self.path))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise WorkspaceError(
                f"{self.path}: unreadable ({reason}); move it aside (no task is skipped then)"
            ) from None
        entries = data.get("skipped") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("task"), str) for e in entries
        ):
            raise WorkspaceError(f"{self.path}: unexpected content; move it aside")
        return [Skipped(e["task"], e.get("skipped_at"), e.get("request_id")) for e in entries]

    def tasks(self) -> list[str]:
        return [one.task for one in self.load()]

    def add(self, task: str, *, skipped_at: str | None, request_id: str | None) -> bool:
        """Skip ``task``; False when it was skipped already."""
        with self._locked():
            skipped = self.load()
            if any(one.task == task for one in skipped):
                return False
            self._save([*skipped, Skipped(task, skipped_at, request_id)])
            return True

    def take_back(self, task: str) -> Skipped:
        """Skip ``task`` no more (``loopkit unskip``); TaskNotFound when it is not skipped."""
        with self._locked():
            skipped = self.load()
            found = next((one for one in skipped if one.task == task), None)
            if found is None:
                raise TaskNotFound(_not_skipped(task, [one.task for one in skipped]))
            self._save([one for one in skipped if one is not found])
            return found

    def _save(self, skipped: list[Skipped]) -> None:
        data = {"schema_version": SCHEMA_VERSION, "skipped": [one.to_dict() for one in skipped]}
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.write_json(self.path, data, mode=0o600)
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, self.path)) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self._lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self._lock, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot create {self._lock}: {exc.strerror}; make the workspace writable"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _not_skipped(task: str, skipped: list[str]) -> str:
    if not skipped:
        return f"task {task!r} is not skipped: no task is (`loopkit status` lists skipped tasks)"
    import difflib  # only to name a typo's fix

    near = difflib.get_close_matches(task, skipped, n=1)
    hint = f"did you mean {near[0]!r}?" if near else "skipped: " + ", ".join(map(repr, skipped))
    return f"task {task!r} is not skipped; {hint} (give the task as `loopkit status` lists it)"
