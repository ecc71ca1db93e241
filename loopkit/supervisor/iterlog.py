"""``.loopkit/logs/iteration-<n>.log``: what each iteration's commands printed.

The file is created on the first byte of output, so a silent iteration costs no file (a
tight loop is not a file-creation loop). Each command's output is framed by a header and a
footer line. The newest :data:`KEEP` logs are kept. One log holds at most ``[loop]
max_log`` bytes of output (SPEC section 17): a runaway or hostile agent cannot fill the disk;
what is dropped is counted, in one ``[… N bytes cut]`` line where it was dropped.
"""

from __future__ import annotations

import contextlib
import os

from loopkit.redact import LineRedactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from io import FileIO
    from pathlib import Path

    from loopkit.redact import Redactor

KEEP = 500
MAX_LOG = 50 * 1024 * 1024  # the default of [loop] max_log


class Capped:
    """Passes bytes on to ``sink`` until ``limit`` have gone through, then only counts what it
    drops; :meth:`note` passes on one line saying how much was cut (and resets the count)."""

    def __init__(self, sink: Callable[[bytes], object], limit: int) -> None:
        self.sink = sink
        self.limit = limit
        self.passed = 0
        self.cut = 0

    def write(self, chunk: bytes) -> None:
        room = self.limit - self.passed
        if room > 0:
            self.sink(chunk[:room])
            self.passed += min(room, len(chunk))
        self.cut += max(0, len(chunk) - max(room, 0))

    def note(self) -> None:
        if self.cut:
            self.sink(f"\n[… {self.cut} bytes cut: [loop] max_log is {self.limit}]\n".encode())
            self.cut = 0


class IterationLog:
    def __init__(
        self,
        folder: Path,
        iteration: int,
        *,
        redactor: Redactor | None = None,
        limit: int = MAX_LOG,
    ) -> None:
        self.folder = folder
        self._cap = Capped(self._write_file, limit)
        self._lines = LineRedactor(self._cap.write, redactor) if redactor is not None else None
        self.path = folder / f"iteration-{iteration}.log"
        self._file: FileIO | None = None
        self._pending: list[bytes] = []
        self.broken: str | None = None  # why it cannot be written, once known

    def _open(self) -> FileIO | None:
        if self._file is None and self.broken is None:
            try:
                self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                # Unbuffered: each chunk of output is one write, there for `loopkit tail`
                # at once (a chunk is many lines: the redactor hands them on together).
                self._file = os.fdopen(fd, "ab", buffering=0)
            except OSError as exc:
                self.broken = exc.strerror or str(exc)
        return self._file

    def begin(self, line: str) -> None:
        """A command's header: written only if the command prints something."""
        self._pending = [line.encode() + b"\n"]

    def write(self, chunk: bytes) -> None:
        if self._cap.passed >= self._cap.limit:
            self._cap.cut += len(chunk)  # past the cap: counted, never redacted for nothing
            return
        if self._lines is not None:
            self._lines.write(chunk)  # secrets masked, line by line
        else:
            self._cap.write(chunk)

    def _write_file(self, chunk: bytes) -> None:
        handle = self._open()
        if handle is None:
            return
        if self._pending:
            handle.write(b"".join(self._pending))
            self._pending = []
        handle.write(chunk)

    def end(self, line: str) -> None:
        if self._lines is not None:
            self._lines.flush()
        self._cap.note()
        if self._pending:  # the command printed nothing: no header, no footer
            self._pending = []
            return
        if self._file is not None:
            self._file.write(line.encode() + b"\n")
            with contextlib.suppress(OSError):
                self._file.flush()  # on disk before a block reads it back (SPEC §22)

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None


def prune(folder: Path, keep: int = KEEP) -> None:
    try:
        logs = sorted(folder.glob("iteration-*.log"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in logs[:-keep]:
        with contextlib.suppress(OSError):
            old.unlink()
