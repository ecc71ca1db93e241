"""Structured events: JSON lines in ``.loopkit/events.jsonl``, concise lines on the console.

An event is a name and its fields — ``log.info("block_raised", request_id=…, msg="…")`` —
handed to stdlib logging as a dict, with the logger's name, the level and a UTC timestamp.
Other libraries' stdlib records (httpx logs each request, with the full URL and so the bot
token, at INFO) go to the same handlers; every line passes the redaction of the last
:func:`setup` before it is written anywhere.

This is all loopkit ever asked of structlog, which it used before: ~60 lines here, where
``import structlog`` alone imports asyncio, 15–40 ms of every short command's start-up
(SPEC §20).

Call :func:`setup` once per process, from the command line layer. Library code only does
``get_logger(name)``; tests read what was logged with :func:`capture`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from loopkit.redact import Redactor

_HANDLER_MARK = "_loopkit_handler"
# The redaction the last setup() chose is kept on the root logger: logging is process-wide
# state already, and stdlib's own.
_REDACT = "_loopkit_redact"
_ONLY_HERE = ("_console",)  # fields that steer a handler and are never written


ROTATE_AT = 10 * 1024 * 1024  # bytes: events.jsonl moves to events.jsonl.1 from this size
ROTATIONS_KEPT = 3  # events.jsonl.1 … .3; the oldest beyond goes


class _JsonlHandler(logging.Handler):
    """Appends one line per record; the file (0600) and its folder are created on first use.

    Each line is written with a single ``write`` on an ``O_APPEND`` descriptor, so lines from
    concurrent loopkit processes never interleave. At :data:`ROTATE_AT` the file is rotated
    (``.1`` … ``.3`` kept) under an ``flock``, so of several processes one rotates; the others
    notice the new file by its inode and reopen. If the file cannot be written (a read-only
    workspace), events are dropped after one warning on stderr: logging never stops a block.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self._fd: int | None = None
        self._broken = False

    def _current(self) -> int:
        """The descriptor of the file now at ``path`` (reopened after another's rotation)."""
        if self._fd is not None:
            try:
                if os.stat(self.path).st_ino == os.fstat(self._fd).st_ino:
                    return self._fd
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    def _rotate(self) -> None:
        lock = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if os.stat(self.path).st_size < ROTATE_AT:
                    return  # another process rotated it first
            except FileNotFoundError:
                return  # rotated by another, not written to since
            for number in range(ROTATIONS_KEPT - 1, 0, -1):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(f"{self.path}.{number}", f"{self.path}.{number + 1}")
            os.replace(self.path, f"{self.path}.1")
        finally:
            os.close(lock)

    def emit(self, record: logging.LogRecord) -> None:
        if self._broken:
            return
        try:
            line = self.format(record).replace("\n", "\\n") + "\n"
            fd = self._current()
            os.write(fd, line.encode("utf-8", "replace"))
            if os.fstat(fd).st_size >= ROTATE_AT:
                self._rotate()
        except OSError as exc:
            self._broken = True
            sys.stderr.write(
                f"loopkit: warning: cannot write {self.path}: {exc.strerror}; "
                "events are not being recorded\n"
            )

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        super().close()


class _ConsoleFilter(logging.Filter):
    """loopkit's own events from ``level`` up; other libraries' only from WARNING up."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, dict) and record.msg.get("_console") is False:
            return False  # for the file only (a traceback the command line reports itself)
        if record.name.startswith("loopkit"):
            return record.levelno >= self.level
        return record.levelno >= max(self.level, logging.WARNING)


def _timestamp(now: float) -> str:
    """ISO 8601 in UTC with microseconds, as ``2026-12-03T20:27:22.123456Z``."""
    seconds = int(now)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + (
        f".{int((now - seconds) * 1_000_000):06d}Z"
    )


def _exception_text(exc_info: Any) -> str:
    if isinstance(exc_info, BaseException):
        return "".join(traceback.format_exception(exc_info)).rstrip()
    if isinstance(exc_info, tuple):
        return "".join(traceback.format_exception(*exc_info)).rstrip()
    return traceback.format_exc().rstrip()


def _event(record: logging.LogRecord) -> dict[str, Any]:
    """The record's event: ours as logged, another library's from its message; redacted."""
    if isinstance(record.msg, dict):
        event = {k: v for k, v in record.msg.items() if k not in _ONLY_HERE}
    else:
        event = {
            "event": record.getMessage(),
            "logger": record.name,
            "level": record.levelname.lower(),
            "timestamp": _timestamp(record.created),
        }
        if record.exc_info:
            event["exception"] = _exception_text(record.exc_info)
    redactor: Redactor | None = getattr(logging.getLogger(), _REDACT, None)
    if redactor is None:
        return event
    return {k: redactor.value(v) for k, v in event.items()}


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_event(record), default=str)


class _ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event = _event(record)
        level = str(event.get("level", "info"))
        text = str(event.get("msg") or event.get("event", ""))
        prefix = "loopkit: " if level == "info" else f"loopkit: {level}: "
        return prefix + text


def setup(
    events_file: Path | None,
    redactor: Redactor,
    *,
    stream: TextIO | None = None,
    console_level: str = "info",
    console: bool = True,
) -> None:
    """Route loopkit's events and stdlib logging to ``events_file`` (JSON) and the console.

    The file gets INFO and above from everyone; the console gets loopkit's events from
    ``console_level`` up (``debug``, ``info``, ``warning``) and other libraries' warnings.
    """
    level = logging.getLevelNamesMapping()[console_level.upper()]
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(min(level, logging.INFO))
    # httpcore's DEBUG traces carry headers; never useful here.
    logging.getLogger("httpcore").setLevel(logging.WARNING)

    if events_file is not None:
        file_handler = _JsonlHandler(events_file)
        file_handler.setFormatter(_JsonFormatter())
        setattr(file_handler, _HANDLER_MARK, True)
        root.addHandler(file_handler)
    if console:
        console_handler = logging.StreamHandler(stream or sys.stderr)
        console_handler.addFilter(_ConsoleFilter(level))
        console_handler.setFormatter(_ConsoleFormatter())
        setattr(console_handler, _HANDLER_MARK, True)
        root.addHandler(console_handler)
    setattr(root, _REDACT, redactor)


class Logger:
    """Events of one component: ``log.info("name", field=value, msg="the console line")``.

    ``exc_info`` (an exception, or true for the one being handled) adds its traceback as
    ``exception``; ``_console=False`` keeps an event off the console."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: int, event: str, fields: dict[str, Any]) -> None:
        logger = logging.getLogger(self.name)
        if not logger.isEnabledFor(level):
            return
        exc_info = fields.pop("exc_info", None)
        record: dict[str, Any] = {"event": event, **fields}
        record["logger"] = self.name
        record["level"] = logging.getLevelName(level).lower()
        record["timestamp"] = _timestamp(time.time())
        if exc_info:
            record["exception"] = _exception_text(exc_info)
        logger.log(level, record)

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, {"exc_info": True, **fields})


def get_logger(name: str) -> Logger:
    return Logger(name)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, dict):  # loopkit's own events
            self.events.append(_event(record))


@contextlib.contextmanager
def capture() -> Iterator[list[dict[str, Any]]]:
    """loopkit's events logged in the block, at any level, as the file gets them (for tests)."""
    root = logging.getLogger()
    handler, level = _Capture(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler.events
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
