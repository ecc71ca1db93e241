"""``loopkit tail [REPO]``: a loop's recent history, then what it does as it does it, like
``tail -f`` (SPEC section 24).

What it prints is the iteration logs (``.loopkit/logs/iteration-<n>.log``): every command's
output as the console showed it — for an agent whose events loopkit reads, its turn as text
(what it says, each call it makes, each call that failed, its result, each message a human
gave it) — framed by a header and a footer per command. The supervisor writes them line by
line as they come, redacted; here each line passes this machine's redactor again and has its
control characters shown escaped (SPEC §28: what an agent prints must not drive the human's
terminal). When the loop moves to its next iteration, its log follows on, under a line
saying so.

Following is polling the newest log (every :data:`EVERY` s): ``tail -f``'s own way, and
what works on every file system; it ends with Ctrl-C (or when ``stop`` is set).
"""

from __future__ import annotations

import os
import re
import threading

from loopkit.escalation.marker import visible

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from loopkit.redact import Redactor

EVERY = 0.1  # seconds between two looks at the log
WIDTH = 2000  # characters of a line shown
_NAME = r"iteration-(\d+)\.log"


def logs(folder: Path) -> list[tuple[int, Path]]:
    """The iteration logs in ``folder``, oldest first."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = [(int(m.group(1)), folder / n) for n in names if (m := re.fullmatch(_NAME, n))]
    return sorted(found)


def history(folder: Path, count: int) -> tuple[list[str], tuple[int, Path, int] | None]:
    """The last ``count`` lines of the logs (from as many of the newest as hold them), and
    where following goes on: the newest log and how far it was read."""
    found = logs(folder)
    collected: list[tuple[int, list[str]]] = []  # the newest first
    position: tuple[int, Path, int] | None = None
    total = 0
    for number, path in reversed(found):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if position is None:
            whole = data.rfind(b"\n") + 1  # a partial last line is printed once complete
            position = (number, path, whole)
            data = data[:whole]
        text = data.decode("utf-8", "replace").splitlines()
        collected.append((number, text))
        total += len(text)
        if total >= count:
            break
    lines: list[str] = []
    for number, text in reversed(collected):
        lines += [f"── iteration {number} ──", *text]
    return (lines[-count:] if count else []), position


class Follow:
    """Prints a workspace's log lines as they are written (``write``: one line each)."""

    def __init__(self, folder: Path, write: Callable[[str], None], redactor: Redactor) -> None:
        self.folder = folder
        self.write = write
        self.redactor = redactor
        self.stop = threading.Event()

    def show(self, line: str) -> None:
        self.write(visible(self.redactor.text(line), WIDTH))

    def run(self, count: int, *, follow: bool = True) -> None:
        shown, position = history(self.folder, count)
        for line in shown:
            self.show(line)
        if not follow:
            return
        partial = b""
        while not self.stop.is_set():
            newest = logs(self.folder)
            if position is None and newest:
                number, path = newest[-1]
                self.show(f"── iteration {number} ──")
                position = (number, path, 0)
            if position is not None:
                number, path, offset = position
                partial, offset = self._read(path, offset, partial)
                later = [(n, p) for n, p in newest if n > number]
                if later:  # the loop moved on: the rest of this one, then the next
                    partial, offset = self._read(path, offset, partial)
                    if partial:
                        self.show(partial.decode("utf-8", "replace"))
                        partial = b""
                    number, path = later[0]
                    self.show(f"── iteration {number} ──")
                    offset = 0
                position = (number, path, offset)
            self.stop.wait(EVERY)

    def _read(self, path: Path, offset: int, partial: bytes) -> tuple[bytes, int]:
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except OSError:
            return partial, offset
        if not data:
            return partial, offset
        data = partial + data
        cut = data.rfind(b"\n") + 1
        for line in data[:cut].decode("utf-8", "replace").splitlines():
            self.show(line)
        return data[cut:], offset + len(data) - len(partial)
