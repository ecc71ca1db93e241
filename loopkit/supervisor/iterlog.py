"""``.loopkit/logs/iteration-<n>.log``: what each iteration's commands printed.

The file is created on the first byte of output, so a silent iteration costs no file (a
tight loop is not a file-creation loop). Each command's output is framed by a header and a
footer line. The newest :data:`KEEP` logs are kept.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO

from loopkit.redact import LineRedactor, Redactor

KEEP = 500


class IterationLog:
    def __init__(self, folder: Path, iteration: int, *, redactor: Redactor | None = None) -> None:
        self.folder = folder
        self._lines = LineRedactor(self._write, redactor) if redactor is not None else None
        self.path = folder / f"iteration-{iteration}.log"
        self._file: BinaryIO | None = None
        self._pending: list[bytes] = []
        self.broken: str | None = None  # why it cannot be written, once known

    def _open(self) -> BinaryIO | None:
        if self._file is None and self.broken is None:
            try:
                self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                self._file = os.fdopen(fd, "ab")
            except OSError as exc:
                self.broken = exc.strerror or str(exc)
        return self._file

    def begin(self, line: str) -> None:
        """A command's header: written only if the command prints something."""
        self._pending = [line.encode() + b"\n"]

    def write(self, chunk: bytes) -> None:
        if self._lines is not None:
            self._lines.write(chunk)  # secrets masked, line by line
        else:
            self._write(chunk)

    def _write(self, chunk: bytes) -> None:
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
        if self._pending:  # the command printed nothing: no header, no footer
            self._pending = []
            return
        if self._file is not None:
            self._file.write(line.encode() + b"\n")

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
