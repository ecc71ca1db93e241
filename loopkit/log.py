"""Structured events: JSON lines in ``.loopkit/events.jsonl``, concise lines on the console.

An event is a name and its fields — ``log.info("block_raised", request_id=…, msg="…")`` —
written with the logger's name, the level and a UTC timestamp. Other libraries' stdlib
logging records (httpx logs each request, with the full URL and so the bot token, at INFO)
go to the same file and console; every line passes the redaction of the last :func:`setup`
before it is written anywhere.

Two ways, one format. The short commands (``status``, ``reply``, the hooks …) write their
few events here, without :mod:`logging` or structlog — their imports are 5–6 ms and ~50 ms
of a start-up that has none to spare (SPEC §20). The long-running processes (``run``,
``serve``, ``mcp``, and so the relays) are set up with structlog instead
(:mod:`loopkit.structured`): there every event passes its processor chain, which redacts,
writes the JSON line and renders the console line. Library code only ever does
``get_logger(name)``, and it is the same either way.

Other libraries' stdlib records are bridged explicitly (:func:`bridge`), where loopkit brings
in a library that logs, and at setup when :mod:`logging` is loaded already. Call
:func:`setup` once per process, from the command line layer; tests read what was logged
with :func:`capture`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time

from loopkit.audit.names import AUDITED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any, Protocol, TextIO

    from loopkit.audit.sink import Sink
    from loopkit.redact import Redactor

    class Structured(Protocol):
        """Where an event goes in a long-running process (:mod:`loopkit.structured`)."""

        def __call__(
            self, level: int, logger: str, event: str, fields: dict[str, Any], *, ours: bool
        ) -> None: ...


# The levels, numbered as stdlib logging numbers them.
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
LEVELS = {"debug": DEBUG, "info": INFO, "warning": WARNING, "error": ERROR}
_NAMES = {number: name for name, number in LEVELS.items()}
_ONLY_HERE = ("_console",)  # fields that steer a sink and are never written

ROTATE_AT = 10 * 1024 * 1024  # bytes: events.jsonl moves to events.jsonl.1 from this size
ROTATIONS_KEPT = 3  # events.jsonl.1 … .3; the oldest beyond goes


class _JsonlFile:
    """Appends one line per event; the file (0600) and its folder are created on first use.

    Each line is written with a single ``write`` on an ``O_APPEND`` descriptor, so lines from
    concurrent loopkit processes never interleave. At :data:`ROTATE_AT` the file is rotated
    (``.1`` … ``.3`` kept) under an ``flock``, so of several processes one rotates; the others
    notice the new file by its inode and reopen. If the file cannot be written (a read-only
    workspace), events are dropped after one warning on stderr: logging never stops a block.
    """

    def __init__(self, path: Path) -> None:
        import _thread

        self.path = path
        self._fd: int | None = None
        self._broken = False
        self._closed = False  # by a later setup(): a write racing it is dropped, not reopened
        self._lock = _thread.allocate_lock()

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

    def write(self, text: str) -> None:
        """``text`` as one line (a newline in it is escaped)."""
        if self._broken:
            return
        line = text.replace("\n", "\\n") + "\n"
        with self._lock:
            if self._closed:
                return
            try:
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
        with self._lock:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class _Sinks:
    """Where events go: the events file (INFO up from everyone), the console (loopkit's from
    its level up, other libraries' from WARNING up), the captures of :func:`capture`, and —
    for loopkit's own events that :data:`~loopkit.audit.names.AUDITED` names — the audit
    trail and its OpenTelemetry export (:mod:`loopkit.audit.sink`, built on the first such
    event: a short command that audits nothing imports none of it)."""

    def __init__(self) -> None:
        self.file: _JsonlFile | None = None
        self.console: TextIO | None = None
        self.console_level = WARNING
        self.redactor: Redactor | None = None
        self.captures: list[list[dict[str, Any]]] = []
        # In a long-running process, structlog's chain (loopkit.structured): every event
        # and every bridged record goes through it instead.
        self.structured: Structured | None = None
        # The audit: the process's own trail (its .loopkit/ folder; None outside a
        # workspace) and how it ships over OTLP, until the first audited event builds it.
        self.audit_setup: tuple[Path | None, str] | None = None
        self.audit_sink: Sink | None = None

    def lowest(self) -> int:
        """The lowest level any sink takes: below it an event is not even built."""
        if self.captures:
            return DEBUG
        if self.audit_setup is not None:
            return INFO  # an audited event names its workspace, with or without a file
        lowest = self.console_level if self.console is not None else ERROR + 1
        return min(lowest, INFO) if self.file is not None else lowest

    def emit(self, level: int, event: dict[str, Any], *, ours: bool) -> None:
        if ours:
            for seen in self.captures:
                seen.append(self._redacted({k: v for k, v in event.items() if k not in _ONLY_HERE}))
            if event.get("event") in AUDITED:
                self.audit(self._redacted({k: v for k, v in event.items() if k not in _ONLY_HERE}))
        file, console = self.file, self.console  # once: another thread may set up anew
        if file is None and console is None:
            return
        written = self._redacted({k: v for k, v in event.items() if k not in _ONLY_HERE})
        if file is not None and level >= INFO:
            file.write(json.dumps(written, default=str))
        on_console = level >= (self.console_level if ours else max(self.console_level, WARNING))
        if console is not None and on_console and event.get("_console") is not False:
            name = str(written.get("level", "info"))
            text = str(written.get("msg") or written.get("event", ""))
            prefix = "loopkit: " if name == "info" else f"loopkit: {name}: "
            with contextlib.suppress(ValueError, OSError):
                console.write(prefix + text + "\n")
                console.flush()

    def audit(self, event: dict[str, Any]) -> None:
        """An audited event (redacted) into the audit sink, built now if need be."""
        setup = self.audit_setup
        if setup is None:
            return
        sink = self.audit_sink
        if sink is None:
            from loopkit.audit.chain import Trail
            from loopkit.audit.sink import Sink

            folder, ship = setup
            sink = self.audit_sink = Sink(Trail(folder) if folder else None, ship=ship)
        sink.take(event)

    def _redacted(self, event: dict[str, Any]) -> dict[str, Any]:
        if self.redactor is None:
            return event
        return {k: self.redactor.value(v) for k, v in event.items()}


_SINKS = _Sinks()


def timestamp(now: float) -> str:
    """ISO 8601 in UTC with microseconds, as ``2026-12-03T20:27:22.123456Z``."""
    seconds = int(now)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + (
        f".{int((now - seconds) * 1_000_000):06d}Z"
    )


def exception_text(exc_info: Any) -> str:
    import traceback

    if isinstance(exc_info, BaseException):
        return "".join(traceback.format_exception(exc_info)).rstrip()
    if isinstance(exc_info, tuple):
        return "".join(traceback.format_exception(*exc_info)).rstrip()
    return traceback.format_exc().rstrip()


def setup(
    events_file: Path | None,
    redactor: Redactor,
    *,
    stream: TextIO | None = None,
    console_level: str = "info",
    console: bool = True,
    ship: str = "exit",
) -> None:
    """Route loopkit's events and stdlib logging to ``events_file`` (JSON) and the console.

    The file gets INFO and above from everyone; the console gets loopkit's events from
    ``console_level`` up (``debug``, ``info``, ``warning``) and other libraries' warnings.
    Audited events go to the audit trail beside ``events_file`` (or of the workspace they
    name) and, with the OTLP variables set, out as ``ship`` says (:mod:`loopkit.audit.otel`:
    ``exit`` for a short command, ``detached`` for a hook, ``batch`` for a long-running
    process).
    """
    if _SINKS.file is not None:
        _SINKS.file.close()
    _SINKS.file = _JsonlFile(events_file) if events_file is not None else None
    _SINKS.console = (stream or sys.stderr) if console else None
    _SINKS.console_level = LEVELS[console_level.lower()]
    _SINKS.redactor = redactor
    _SINKS.structured = None
    folder = events_file.parent if events_file is not None else None
    if _SINKS.audit_setup != (folder, ship):
        _SINKS.audit_setup, _SINKS.audit_sink = (folder, ship), None
    if "logging" in sys.modules:
        bridge()  # a library already loaded may log; one loaded later is bridged by its user


def sinks() -> _Sinks:
    """Where events go now (:mod:`loopkit.structured`'s chain writes to the same)."""
    return _SINKS


def use_structured(structured: Structured | None) -> None:
    """Route every event through ``structured`` (a long-running process's structlog
    chain), or back to the plain sinks (None)."""
    _SINKS.structured = structured


def reset() -> None:
    """No sink any more (tests): events are built for no one, the file is closed."""
    if _SINKS.file is not None:
        _SINKS.file.close()
    _SINKS.file, _SINKS.console, _SINKS.redactor = None, None, None
    _SINKS.structured = None
    _SINKS.audit_setup, _SINKS.audit_sink = None, None


class Logger:
    """Events of one component: ``log.info("name", field=value, msg="the console line")``.

    ``exc_info`` (an exception, or true for the one being handled) adds its traceback as
    ``exception``; ``_console=False`` keeps an event off the console."""

    def __init__(self, name: str) -> None:
        self.name = name

    def _log(self, level: int, event: str, fields: dict[str, Any]) -> None:
        structured = _SINKS.structured
        if structured is not None:
            structured(level, self.name, event, fields, ours=True)
            return
        if level < _SINKS.lowest():
            return
        exc_info = fields.pop("exc_info", None)
        record: dict[str, Any] = {"event": event, **fields}
        record["logger"] = self.name
        record["level"] = _NAMES[level]
        record["timestamp"] = timestamp(time.time())
        if exc_info:
            record["exception"] = exception_text(exc_info)
        _SINKS.emit(level, record, ours=True)

    def debug(self, event: str, **fields: Any) -> None:
        self._log(DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(ERROR, event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._log(ERROR, event, {"exc_info": True, **fields})


def get_logger(name: str) -> Logger:
    return Logger(name)


@contextlib.contextmanager
def capture() -> Iterator[list[dict[str, Any]]]:
    """loopkit's events logged in the block, at any level, as the file gets them (for tests)."""
    seen: list[dict[str, Any]] = []
    _SINKS.captures.append(seen)
    try:
        yield seen
    finally:
        _SINKS.captures.remove(seen)


# --- other libraries' records, by stdlib logging ------------------------------------------

_BRIDGE_MARK = "_loopkit_bridge"


def bridge() -> None:
    """Hand every stdlib record from INFO up to the sinks (once per process), redacted as
    loopkit's own events are. Called by :func:`setup` when :mod:`logging` is loaded
    already, and explicitly by the code that brings in a library that logs (a channel's
    HTTP client, psycopg, slack_sdk, apprise) — never by an import hook: a short command
    that uses no such library imports no :mod:`logging` (SPEC §20)."""
    import logging

    root = logging.getLogger()
    if any(getattr(handler, _BRIDGE_MARK, False) for handler in root.handlers):
        return

    class Bridge(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            structured = _SINKS.structured
            if structured is not None:
                fields = {"exc_info": record.exc_info} if record.exc_info else {}
                structured(record.levelno, record.name, record.getMessage(), fields, ours=False)
                return
            event: dict[str, Any] = {
                "event": record.getMessage(),
                "logger": record.name,
                "level": record.levelname.lower(),
                "timestamp": timestamp(record.created),
            }
            if record.exc_info:
                event["exception"] = exception_text(record.exc_info)
            _SINKS.emit(record.levelno, event, ours=False)

    handler = Bridge(INFO)
    setattr(handler, _BRIDGE_MARK, True)
    root.addHandler(handler)
    if root.level > INFO:
        root.setLevel(INFO)
    # httpcore's DEBUG traces carry headers; never useful here.
    logging.getLogger("httpcore").setLevel(WARNING)
