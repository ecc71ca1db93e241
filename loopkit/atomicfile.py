"""Atomic file writes: a crash leaves the old file or the new one, never half of either.

The data goes to a temporary file in the same folder, is flushed and fsynced, then moved
into place with ``os.replace`` (or hard-linked, for create-only writes, so an existing file
is never overwritten). The folder is fsynced afterwards so the rename itself is durable.

``durable=False`` skips both fsyncs and keeps the atomicity: for progress that is cheap to
lose to a power cut but written often (the supervisor's iteration number), where two
fsyncs per iteration would dominate a fast loop. A process crash loses nothing either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_temp(path: Path, data: bytes, mode: int, durable: bool = True) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    return Path(tmp)


def write_bytes(path: Path, data: bytes, *, mode: int = 0o644, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically."""
    tmp = _write_temp(path, data, mode, durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        _fsync_dir(path.parent)


def write_text(path: Path, text: str, *, mode: int = 0o644) -> None:
    write_bytes(path, text.encode("utf-8"), mode=mode)


def write_json(path: Path, data: Any, *, mode: int = 0o600, durable: bool = True) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_bytes(path, text.encode(), mode=mode, durable=durable)


def create_text(path: Path, text: str, *, mode: int = 0o644) -> bool:
    """Create ``path`` atomically unless something already exists there.

    Returns False, writing nothing, when ``path`` exists (a file, a folder, anything). The
    hard link makes "check and create" one step, so two writers racing cannot both win and
    a reader never sees a partial file.
    """
    tmp = _write_temp(path, text.encode("utf-8"), mode)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    _fsync_dir(path.parent)
    return True
