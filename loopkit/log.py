"""Structured events: JSON lines in ``.loopkit/events.jsonl``, concise lines on the console.

Our own events go through structlog; stdlib logging (httpx logs each request, with the full
URL and so the bot token, at INFO) is bridged through the same processors, and every line
passes the redaction processor before it is rendered anywhere.

Call :func:`setup` once per process, from the command line layer. Library code only does
``get_logger(name)``.

structlog is imported only by a process that logs (SPEC §20): its stdlib bridge imports
asyncio, ~15–90 ms of a command's start-up. :func:`get_logger` hands out a logger that
becomes structlog's on its first call, :func:`setup` installs handlers whose formatters are
built on their first record, and structlog is configured when it is first imported here (at
once, if something already imported it).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loopkit.redact import Redactor

if TYPE_CHECKING:
    from types import ModuleType

    from structlog.typing import EventDict, Processor, WrappedLogger

_HANDLER_MARK = "_loopkit_handler"


class _RedactProcessor:
    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def __call__(self, logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
        return {k: self.redactor.value(v) for k, v in event_dict.items()}


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


def _console_renderer(logger: WrappedLogger, name: str, event_dict: EventDict) -> str:
    level = str(event_dict.get("level", "info"))
    text = str(event_dict.get("msg") or event_dict.get("event", ""))
    prefix = "loopkit: " if level == "info" else f"loopkit: {level}: "
    return prefix + text


def _drop_console_only(logger: WrappedLogger, name: str, event_dict: EventDict) -> EventDict:
    event_dict.pop("_record", None)
    event_dict.pop("_from_structlog", None)
    return event_dict


class _Deferred(logging.Formatter):
    """A formatter built on the first record it formats (so structlog is imported then)."""

    def __init__(self, make: Callable[[], logging.Formatter]) -> None:
        super().__init__()
        self._make = make
        self._made: logging.Formatter | None = None

    def format(self, record: logging.LogRecord) -> str:
        if self._made is None:
            self._made = self._make()
        return self._made.format(record)


def _shared(redact: _RedactProcessor) -> list[Processor]:
    import structlog

    return [
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        redact,
    ]


def _file_formatter(redact: _RedactProcessor) -> logging.Formatter:
    import structlog

    return structlog.stdlib.ProcessorFormatter(
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.JSONRenderer(sort_keys=False, default=str),
        ],
        foreign_pre_chain=_shared(redact),
    )


def _console_formatter(redact: _RedactProcessor) -> logging.Formatter:
    import structlog

    return structlog.stdlib.ProcessorFormatter(
        processors=[_drop_console_only, _console_renderer], foreign_pre_chain=_shared(redact)
    )


def _configure(redact: _RedactProcessor) -> None:
    import structlog

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared(redact),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


# The redaction the last setup() chose, and the one structlog was last configured with, are
# kept on the root logger: logging is process-wide state already, and stdlib's own.
_REDACT = "_loopkit_redact"
_CONFIGURED = "_loopkit_configured"


def setup(
    events_file: Path | None,
    redactor: Redactor,
    *,
    stream: TextIO | None = None,
    console_level: str = "info",
    console: bool = True,
) -> None:
    """Route structlog and stdlib logging to ``events_file`` (JSON) and the console.

    The file gets INFO and above from everyone; the console gets loopkit's events from
    ``console_level`` up (``debug``, ``info``, ``warning``) and other libraries' warnings.
    """
    level = logging.getLevelNamesMapping()[console_level.upper()]
    redact = _RedactProcessor(redactor)
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
        file_handler.setFormatter(_Deferred(lambda: _file_formatter(redact)))
        setattr(file_handler, _HANDLER_MARK, True)
        root.addHandler(file_handler)
    if console:
        console_handler = logging.StreamHandler(stream or sys.stderr)
        console_handler.addFilter(_ConsoleFilter(level))
        console_handler.setFormatter(_Deferred(lambda: _console_formatter(redact)))
        setattr(console_handler, _HANDLER_MARK, True)
        root.addHandler(console_handler)

    setattr(root, _REDACT, redact)
    if "structlog" in sys.modules:
        _structlog()


def _structlog() -> ModuleType:
    """structlog, configured by the last :func:`setup` (imported now if it was not yet).
    Two threads logging first at once may both configure it: the same configuration, twice.
    """
    import structlog

    root = logging.getLogger()
    redact = getattr(root, _REDACT, None)
    if redact is not None and getattr(root, _CONFIGURED, None) is not redact:
        _configure(redact)
        setattr(root, _CONFIGURED, redact)
    return structlog


class _Logger:
    """A structlog logger, made on its first call: a module may hold one at import time."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        if self._logger is None:
            self._logger = _structlog().get_logger(self._name)
        return getattr(self._logger, attribute)


def get_logger(name: str) -> Any:
    """A structlog logger; events carry ``msg`` for the console line when one is wanted."""
    return _Logger(name)
