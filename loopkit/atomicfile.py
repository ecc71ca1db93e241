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
import errno
import json
import os
import re
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# mkstemp(prefix=".<name>.", suffix=".tmp"): eight random characters before the suffix.
_TEMP = re.compile(r"\A\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp\Z")
STALE_AFTER = 600.0  # seconds: a write in progress never takes this long


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789_"


def _create_temp(path: Path) -> tuple[int, str]:
    """A new file ``.<name>.XXXXXXXX.tmp`` beside ``path``, created exclusively (0600) —
    ``tempfile.mkstemp``'s naming and guarantees, without tempfile's imports (SPEC §20)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    for _ in range(100):
        suffix = "".join(_LETTERS[b % len(_LETTERS)] for b in os.urandom(8))
        tmp = os.path.join(path.parent, f".{path.name}.{suffix}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", str(path.parent))


def _write_temp(path: Path, data: bytes, mode: int, durable: bool = True) -> Path:
    fd, tmp = _create_temp(path)
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


def write_json(
    path: Path, data: Any, *, mode: int = 0o600, durable: bool = True, compact: bool = False
) -> None:
    """``data`` as JSON: indented for a human, or ``compact`` (one line) for a machine's
    record written often (``running.json``)."""
    if compact:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n"
    else:
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


def failure(exc: OSError, path: Path) -> str:
    """One line for a write that failed: what, where, and how to fix it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the disk holding {path}; free some space and run it again"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write {path}: {exc.strerror}; make the folder writable"
    return f"cannot write {path}: {exc.strerror or exc}"


def sweep(folder: Path, *, names: tuple[str, ...] | None = None, now: float | None = None) -> int:
    """Remove this module's temporary files that a crash left in ``folder``.

    Only files of this module's naming (``.<name>.XXXXXXXX.tmp``) older than
    :data:`STALE_AFTER` go, and with ``names`` only those for a file of one of those names
    (in a folder loopkit shares with the user). Returns how many were removed.
    """
    removed = 0
    for path in stale(folder, names=names, now=now):
        with contextlib.suppress(OSError):
            os.unlink(path)
            removed += 1
    return removed


def stale(
    folder: Path, *, names: tuple[str, ...] | None = None, now: float | None = None
) -> list[str]:
    """The paths :func:`sweep` would remove from ``folder``, removing nothing."""
    found: list[str] = []
    cutoff = (time.time() if now is None else now) - STALE_AFTER
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        match = _TEMP.match(entry.name)
        if not match or (names is not None and match["name"] not in names):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                found.append(entry.path)
    return found
