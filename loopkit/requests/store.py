"""The request store: reads and writes ``requests/<id>.json``, never deleting one.

Every read-modify-write happens under the store lock (``.loopkit/locks/requests.lock``, an
``flock``), so concurrent writers serialise.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading

from loopkit import atomicfile, clock, readfile
from loopkit.errors import BadInput, RequestConflict, RequestNotFound, WorkspaceError
from loopkit.requests.hub import LocalHub
from loopkit.requests.models import Status
from loopkit.requests.record import Request, is_id, validate_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from loopkit.requests.hub import Hub
    from loopkit.requests.models import Resolution
    from loopkit.workspace import Workspace


class RequestStore:
    """One workspace's requests. ``hub`` is the hub its workspace's configuration names
    (handed down by whoever assembled the process; :class:`LocalHub` alone): every write is
    mirrored through it and every answer claimed through it."""

    writes = True  # False for a dry run's store: nothing it is handed is kept, or recorded

    def __init__(self, workspace: Workspace, *, hub: Hub | None = None) -> None:
        self.workspace = workspace
        self.hub: Hub = hub if hub is not None else LocalHub()
        self.folder = workspace.requests_dir
        self._guard = threading.RLock()  # makes locked() reentrant within this store
        self._depth = 0

    def path(self, request_id: str) -> Path:
        return self.folder / f"{validate_id(request_id)}.json"

    def relative(self, request_id: str) -> str:
        return f"requests/{request_id}.json"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's lock: one read-modify-write at a time, across processes.

        Reentrant for this store object (a nested ``locked()`` in the same thread does not
        deadlock on its own ``flock``); other threads and processes wait.
        """
        with self._guard:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            lock_dir = self.workspace.locks_dir
            try:
                lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(lock_dir / "requests.lock", os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise WorkspaceError(
                    f"cannot create the lock in {lock_dir}: {exc.strerror}; "
                    "make the workspace writable"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._depth = 1
                yield
            finally:
                self._depth = 0
                os.close(fd)

    def load(self, request_id: str) -> Request:
        path = self.path(request_id)
        try:
            raw = readfile.read_text(path)
        except FileNotFoundError:
            raise RequestNotFound(
                f"no request {request_id!r} in {self.folder}; `loopkit requests` lists them"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise BadInput(f"{path}: cannot read: {reason}; move it away or restore it") from None
        try:
            data = readfile.json_document(raw)
        except readfile.JSONProblem as exc:
            raise BadInput(
                f"{exc.where(path)}: {exc.reason}; the file was left as it was, fix or restore it"
            ) from None
        if not isinstance(data, dict):
            raise BadInput(f"{path}: not a JSON object; the file was left as it was")
        return Request.from_dict(data, source=str(path))

    def load_unchanged(self, request_id: str, expected_updated_at: str | None) -> Request:
        """``load``, refusing (exit 4) a record changed since ``expected_updated_at``."""
        record = self.load(request_id)
        if expected_updated_at is not None and not _same_time(
            record.updated_at, expected_updated_at
        ):
            raise RequestConflict(
                f"request {request_id!r} changed since {expected_updated_at} (now "
                f"{record.updated_at}); read it again with `loopkit requests show {request_id}`"
            )
        return record

    def _write(self, record: Request, *, durable: bool = True) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomicfile.write_json(
                self.path(record.request_id), record.to_dict(), mode=0o600, durable=durable
            )
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, self.path(record.request_id))) from None
        self.hub.mirror(self.workspace, record)  # the file is the record; the fleet, a copy

    def create(self, record: Request) -> None:
        """Write a new record; an existing one with the same id is a conflict (exit 4)."""
        if self.path(record.request_id).exists():
            raise RequestConflict(
                f"request {record.request_id!r} already exists; choose another id"
            )
        self._write(record)

    def save(self, record: Request, *, durable: bool = True) -> None:
        """Rewrite a record, moving ``updated_at`` on (always strictly later)."""
        record.updated_at = clock.later_than(record.updated_at)
        self._write(record, durable=durable)

    def update(
        self,
        request_id: str,
        change: Callable[[Request], bool | None],
        *,
        expected_updated_at: str | None = None,
        durable: bool = True,
    ) -> Request:
        """The one read-modify-write: under the lock, load the record, ``change`` it in place,
        save it. ``change`` returns False when it changed nothing (no write, ``updated_at``
        stays) and raises to refuse (the record on disk is untouched then). A stale
        ``expected_updated_at`` is a conflict (exit 4). ``durable=False``: atomic, without
        fsync — for a change the writer makes again after a power cut loses it."""
        with self.locked():
            record = self.load_unchanged(request_id, expected_updated_at)
            if change(record) is not False:
                self.save(record, durable=durable)
            return record

    def resolve(
        self, request_id: str, resolution: Resolution, *, status: Status = Status.RESOLVED
    ) -> tuple[Request, bool]:
        """Close an open request, once. Returns the record and whether this call closed it.

        A request that is no longer open is returned untouched (the first answer stands).
        """
        closed = False

        def close(record: Request) -> bool:
            nonlocal closed
            if not record.is_open:
                return False
            record.status, record.resolution, closed = status, resolution, True
            return True

        return self.update(request_id, close), closed

    def ids(self) -> list[str]:
        try:
            names = sorted(p.stem for p in self.folder.glob("*.json") if is_id(p.stem))
        except OSError:
            return []
        return names

    def changed_since(self, ns: int) -> list[str]:
        """The ids of records written at or after ``ns`` (``time.time_ns()``), by their files'
        mtime: a stat each, no record read."""
        found: list[tuple[int, str]] = []
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    stem, dot, ext = entry.name.rpartition(".")
                    if not (dot and ext == "json" and is_id(stem)):
                        continue
                    with contextlib.suppress(OSError):
                        if (mtime := entry.stat().st_mtime_ns) >= ns:
                            found.append((mtime, stem))
        except OSError:
            return []
        return [stem for _, stem in sorted(found)]

    def mentioning(self, text: str, since_ns: int) -> list[str]:
        """The ids of records written at or after ``since_ns`` whose file holds ``text`` — a
        read each, no parse: a cheap sieve before :meth:`load` (SPEC §20)."""
        needle = text.encode()
        found = []
        for request_id in self.changed_since(since_ns):
            with contextlib.suppress(OSError):
                if needle in readfile.read_bytes(self.path(request_id)):
                    found.append(request_id)
        return found

    def all(self) -> Iterator[tuple[str, Request | BadInput]]:
        """Every record, oldest first; a corrupt one yields its error instead of stopping."""
        loaded: list[tuple[str, Request | BadInput]] = []
        for request_id in self.ids():
            try:
                loaded.append((request_id, self.load(request_id)))
            except BadInput as exc:
                loaded.append((request_id, exc))
            except RequestNotFound:
                continue
        loaded.sort(key=lambda item: item[1].created_at if isinstance(item[1], Request) else "")
        yield from loaded

    def replacing(self, request_id: str) -> Request | None:
        """The open request asked in place of ``request_id`` — a block whose record could not
        be read, asked again from its ``BLOCKED.md`` (``extra["replaces"]``) — or None."""
        for _, record in self.all():
            if (
                isinstance(record, Request)
                and record.is_open
                and record.extra.get("replaces") == request_id
            ):
                return record
        return None

    def find_open_by_key(self, key: str) -> Request | None:
        for _, record in self.all():
            if isinstance(record, Request) and record.request_key == key and record.is_open:
                return record
        return None


def _same_time(stored: str, given: str) -> bool:
    """The same instant, however it is written (``Z`` or ``+00:00``, trailing zeros)."""
    if stored == given:
        return True
    try:
        return clock.parse_iso(stored) == clock.parse_iso(given)
    except ValueError:
        return False
