"""Where an audited event goes: the one place events pass hands it here.

:mod:`loopkit.log` (the short commands, the hooks) and :mod:`loopkit.structured` (structlog's
chain in ``run``, ``serve``, ``mcp``) give every event loopkit writes — redacted, as the
events file gets it — to :meth:`Sink.take`. The events
:data:`~loopkit.audit.names.AUDITED` names become a line of the audit chain
(:mod:`~loopkit.audit.chain`) of the workspace they belong to — the
``workspace`` field the event carries (``serve`` and the relays answer for every registered
workspace), else the process's own — and, with the OTLP variables set, a log record
(:mod:`~loopkit.audit.otel`). No call site writes the audit itself.

A trail that cannot be written is said once on stderr and never stops the block, the
answer or the gate decision that was being recorded.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path

from loopkit.audit import chain, otel
from loopkit.audit.names import AUDITED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NOT_KEPT = ("event", "timestamp", "logger", "level", "workspace", "exception")


class Sink:
    """Audited events for one process: ``default`` is the trail of the process's own
    workspace (None: outside one, only events naming their workspace are kept);
    ``ship``: the OTLP mode (:data:`~loopkit.audit.otel.MODES`), None for none."""

    def __init__(self, default: chain.Trail | None, *, ship: str | None = None) -> None:
        self.default = default
        self.shipper: otel.Shipper | None = None
        if ship is not None and otel.wanted():
            if otel.installed():
                self.shipper = otel.Shipper(ship)
            else:
                _warn_once(otel.MISSING)
        self._lock = threading.Lock()  # one append at a time per process (flock: per process)

    def take(self, event: dict[str, Any]) -> None:
        """Keep ``event`` if it is audited."""
        name = event.get("event")
        if name not in AUDITED:
            return
        where = event.get("workspace")
        trail = chain.Trail(Path(where) / ".loopkit") if where else self.default
        entry: dict[str, Any] = {"at": event.get("timestamp"), "event": name}
        entry.update((k, v) for k, v in event.items() if k not in _NOT_KEPT and v is not None)
        entry["host"] = os.uname().nodename
        appended = None
        if trail is not None:
            try:
                with self._lock:
                    appended = chain.append(trail, entry)
            except OSError as exc:
                _warn_once(
                    f"cannot write {trail.path}: {exc.strerror or exc}; audited events are "
                    "not being recorded there"
                )
        if self.shipper is not None:
            seq, sha = (appended.seq, appended.sha256) if appended else (None, None)
            record = otel.record_of(entry, seq, sha)
            place = where or (trail.state_dir.parent if trail is not None else None)
            if place:
                record["attributes"]["loopkit.workspace"] = str(place)
            self.shipper.emit(record)


_WARNED: set[str] = set()


def _warn_once(text: str) -> None:
    if text in _WARNED:
        return
    _WARNED.add(text)
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"loopkit: warning: {text}\n")
