"""Reading the files loopkit did not necessarily write, without trusting what is there.

Anything in a workspace may be something other than a file: a FIFO (``mkfifo BLOCKED.md``),
a device, a socket, a folder. A plain ``open`` of a FIFO blocks until a writer comes, so a
loop would hang on it for good. Here every file is opened ``O_NONBLOCK`` and checked with
``fstat`` before a byte is read: anything but a regular file is :class:`NotRegularFile`, an
``OSError`` whose ``strerror`` says what is in the way, so every caller's existing
"cannot read: …" line names it.

JSON from disk goes through :func:`json_document`: a document nested thousands deep (which
makes the decoder raise ``RecursionError``) is refused like any other corrupt file.
"""

from __future__ import annotations

import errno
import json
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

MAX_DEPTH = 64  # no file loopkit reads nests deeper than a few levels

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegularFile(OSError):
    """Something other than a regular file is at the path."""


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: Path | str, limit: int | None = None, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``). Never blocks on a FIFO.
    ``follow_links=False``: a symbolic link at ``path`` is refused, never read through (a file
    an agent controls, such as ``BLOCKED.md``)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags if follow_links else flags | os.O_NOFOLLOW)
    except IsADirectoryError:
        raise NotRegularFile(errno.EISDIR, "a folder, not a file", str(path)) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise NotRegularFile(errno.ELOOP, "a symbolic link, not a file", str(path)) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"{kind_of(mode)}, not a file", str(path))
        chunks: list[bytes] = []
        size = 0
        while limit is None or size < limit:
            chunk = os.read(fd, 65536 if limit is None else min(65536, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path | str, *, errors: str = "strict") -> str:
    """The UTF-8 text of the regular file at ``path`` (UnicodeDecodeError when it is not)."""
    return read_bytes(path).decode("utf-8", errors)


def too_deep(data: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``data`` nests lists and objects deeper than ``limit`` (no recursion)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class JSONProblem(ValueError):
    """Why a JSON document was refused (``reason``), and on which line when known."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line

    def where(self, path: Path | str) -> str:
        """``path`` or ``path:line``, for the start of an error line."""
        return f"{path}:{self.line}" if self.line else str(path)


def json_document(text: str) -> Any:
    """Parse ``text``; raises :class:`JSONProblem` for bad JSON and for absurd nesting."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONProblem(f"not valid JSON ({exc.msg})", exc.lineno) from None
    except RecursionError:
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels") from None
    if too_deep(data):
        raise JSONProblem(f"nested deeper than {MAX_DEPTH} levels")
    return data
