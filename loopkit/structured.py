"""structlog for the long-running processes: ``run``, ``serve`` and ``mcp`` (and so the
Telegram and Slack relays, the follower, the retrier inside them). SPEC §27.

:func:`setup` sets up :mod:`loopkit.log`'s sinks (the events file, the console, the tests'
captures), then configures structlog with one processor chain, and routes every event —
loopkit's own (``get_logger(name).info(...)``) and other libraries' stdlib records, bridged
explicitly — through it:

1. the logger's name, the level and a UTC timestamp are added; an exception becomes its
   traceback (``exception``);
2. **redaction**: every value passes the one secret walker (:class:`loopkit.redact.Redactor`)
   — a token in httpx's request line never reaches a file or a terminal;
3. **the events file**: the event as one JSON line (INFO and up, from everyone), and to the
   tests' captures (loopkit's own, every level);
4. **the console**: ``loopkit: …`` for loopkit's events from the console level up, other
   libraries' from WARNING up; the rest is dropped here.

The short commands never import this module (nor structlog): their start-up is budgeted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time

import structlog

from loopkit import log
from loopkit.audit.names import AUDITED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import MutableMapping
    from pathlib import Path
    from typing import Any, TextIO

    from loopkit.redact import Redactor

    EventDict = MutableMapping[str, Any]

_OURS = "_ours"  # steers the chain, never written: loopkit's own event, or a library's
_NAMES = {level: name for name, level in log.LEVELS.items()}


def _named(_: object, __: str, event: EventDict) -> EventDict:
    event["level"] = _NAMES.get(event.pop("_level"), "info")
    return event


def _stamped(_: object, __: str, event: EventDict) -> EventDict:
    event["timestamp"] = log.timestamp(time.time())
    return event


def _traceback(_: object, __: str, event: EventDict) -> EventDict:
    exc_info = event.pop("exc_info", None)
    if exc_info:
        event["exception"] = log.exception_text(exc_info)
    return event


def _redacted(_: object, __: str, event: EventDict) -> EventDict:
    redactor = log.sinks().redactor
    if redactor is None:
        return event
    return {key: redactor.value(value) for key, value in event.items()}


def _to_file(_: object, __: str, event: EventDict) -> EventDict:
    sinks = log.sinks()
    written = {k: v for k, v in event.items() if k not in (_OURS, "_console")}
    if event.get(_OURS):
        for seen in sinks.captures:
            seen.append(dict(written))
        if written.get("event") in AUDITED:
            sinks.audit(dict(written))
    if sinks.file is not None and log.LEVELS[event["level"]] >= log.INFO:
        sinks.file.write(json.dumps(written, default=str))
    return event


def _console_line(_: object, __: str, event: EventDict) -> str:
    sinks = log.sinks()
    level = log.LEVELS[event["level"]]
    threshold = sinks.console_level if event.get(_OURS) else max(sinks.console_level, log.WARNING)
    if sinks.console is None or level < threshold or event.get("_console") is False:
        raise structlog.DropEvent
    text = str(event.get("msg") or event.get("event", ""))
    prefix = "loopkit: " if event["level"] == "info" else f"loopkit: {event['level']}: "
    return prefix + text


class _Console:
    """structlog's logger: writes the rendered line to the console of :mod:`loopkit.log`'s
    sinks (read at each event: a later setup may change it)."""

    def msg(self, line: str) -> None:
        console = log.sinks().console
        if console is not None:
            with contextlib.suppress(ValueError, OSError):
                console.write(line + "\n")
                console.flush()

    debug = info = warning = error = critical = exception = msg


def _emit(level: int, logger: str, event: str, fields: dict[str, Any], *, ours: bool) -> None:
    """One event into the chain (what :class:`loopkit.log.Logger` and the stdlib bridge
    call in a structured process)."""
    bound = structlog.get_logger()
    bound.log(level, event, **fields, logger=logger, _level=level, _ours=ours)


def setup(
    events_file: Path | None,
    redactor: Redactor,
    *,
    stream: TextIO | None = None,
    console_level: str = "info",
    console: bool = True,
) -> None:
    """Set this long-running process's events up (arguments as :func:`loopkit.log.setup`):
    structlog's chain for loopkit's events and, bridged, every library's."""
    log.setup(events_file, redactor, stream=stream, console_level=console_level, console=console,
              ship="batch")  # fmt: skip
    structlog.configure(
        processors=[_named, _stamped, _traceback, _redacted, _to_file, _console_line],
        logger_factory=lambda *_: _Console(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        cache_logger_on_first_use=False,
    )
    log.use_structured(_emit)
    log.bridge()


def reset() -> None:
    """Back to the plain sinks (tests)."""
    log.use_structured(None)
    structlog.reset_defaults()
