"""``BLOCKED.md``'s request marker and head, read with the standard library alone.

``loopkit check`` runs at the head of every loop iteration and imports this module and
nothing heavier (not even ``re``; ``errno``, ``os`` and ``stat`` are loaded at start-up
anyway), so the marker is parsed by hand here, for ``check`` and for
:mod:`loopkit.escalation.blockfile` alike: one parser, one answer. A FIFO, a device or a
socket at the path is never read (it would hang): only a regular file is.

The marker is ``<!-- loopkit request: <id> -->`` within the first :data:`MARKER_WINDOW`
characters; whitespace around the id is free, the id is a valid request id.
"""

from __future__ import annotations

import errno
import os
import stat

HEAD_LINES = 30  # what `check` and `run --exit-on-block` print
HEAD_WIDTH = 200  # ... each line cut to this many characters (its escapes shown)
_HEAD_READ = 65536  # characters read at most: a line of megabytes is cut, not read whole
MARKER_WINDOW = 4096  # the marker is looked for in the first this-many characters
_OPEN, _CLOSE, _LABEL = "<!--", "-->", "loopkit request:"
_ID_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ID_REST = _ID_FIRST | {"_", "-"}


def _valid_id(text: str) -> bool:
    return 0 < len(text) <= 64 and text[0] in _ID_FIRST and all(c in _ID_REST for c in text[1:])


def request_id_in(text: str) -> str | None:
    """The request id of the first marker in ``text``'s first MARKER_WINDOW characters."""
    head = text[:MARKER_WINDOW]
    start = head.find(_OPEN)
    while start >= 0:
        end = head.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            return None
        inner = head[start + len(_OPEN) : end].strip()
        if inner.startswith(_LABEL):
            found = inner[len(_LABEL) :].strip()
            if _valid_id(found):
                return found
        start = head.find(_OPEN, start + 1)
    return None


def open_regular(path: str) -> int:
    """A descriptor of the regular file at ``path``. A FIFO, a device or a socket there is an
    OSError, never a hang: it is opened non-blocking and checked before anything is read. A
    symbolic link is an OSError too (``O_NOFOLLOW``): its target is never read as a block."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EINVAL, "not a regular file", path)
    return fd


def request_id_of(path: str) -> str | None:
    """The request id in the marker of the file at ``path``, if it has one."""
    try:
        with open(open_regular(path), encoding="utf-8", errors="replace") as handle:
            return request_id_in(handle.read(MARKER_WINDOW))
    except OSError:
        return None


def read_head(path: str, lines: int = HEAD_LINES) -> str:
    """The first ``lines`` lines of the file at ``path`` (undecodable bytes replaced)."""
    with open(open_regular(path), encoding="utf-8", errors="replace") as handle:
        return "".join(line for _, line in zip(range(lines), handle, strict=False))


def shown_head(path: str, lines: int = HEAD_LINES, width: int = HEAD_WIDTH) -> str:
    """The head of the file at ``path`` as a terminal may print it (SPEC §28): the first
    ``lines`` lines of at most :data:`_HEAD_READ` characters, each made :func:`visible` and
    cut to ``width``. An agent writes BLOCKED.md; what it wrote must not colour, clear,
    retitle or reorder the human's terminal, nor bury the question under a megabyte line."""
    with open(open_regular(path), encoding="utf-8", errors="replace") as handle:
        text = handle.read(_HEAD_READ)
    if not text:
        return ""
    kept = text.split("\n")[:lines]
    if len(kept) < lines and text.endswith("\n"):
        kept = kept[:-1]
    return "".join(visible(line, width) + "\n" for line in kept)


# C0 controls but tab, DEL, C1 controls, and the bidi embeddings, overrides and isolates that
# make text read other than it is: the set loopkit.message.clean escapes, without `re`.
_UNSAFE = frozenset(
    chr(code)
    for first, last in ((0x0, 0x8), (0xA, 0x1F), (0x7F, 0x9F), (0x202A, 0x202E), (0x2066, 0x2069))
    for code in range(first, last + 1)
)


def visible(line: str, width: int = HEAD_WIDTH) -> str:
    """``line`` with every control character and bidi override shown escaped (``\\x1b``,
    ``\\u202e``), cut to ``width`` characters with an ellipsis."""
    shown = "".join(
        (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}") if c in _UNSAFE else c
        for c in line.rstrip("\r")
    )
    return shown if len(shown) <= width else shown[: width - 1] + "…"
