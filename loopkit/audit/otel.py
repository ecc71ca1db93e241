"""The audited events as OpenTelemetry log records, over OTLP/HTTP (SPEC section 30).

On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` is set (and
``OTEL_SDK_DISABLED`` is not ``true``). Everything else is the standard variables, read by
``opentelemetry-sdk``'s OTLP/HTTP log exporter itself: ``OTEL_EXPORTER_OTLP_HEADERS``,
``…_TIMEOUT``, ``…_COMPRESSION``, ``…_CERTIFICATE``, ``…_LOGS_*``, ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``. The SDK comes with the ``[otel]`` extra; without it, one
warning says so and nothing is sent.

Each record: the event's one-line message as its body, ``event_name`` ``loopkit.<event>``,
severity INFO, the event's fields as attributes (``loopkit.<field>``; a value that is not a
string, number or flag as its JSON), and the audit line it is — ``loopkit.audit.seq`` and
``loopkit.audit.sha256`` — so a collector holds what the local chain holds, and a trail
rewritten afterwards does not match what was shipped.

Never on the way of a decision. How a process ships depends on what it is:

- ``batch`` — the long-running processes (``run``, ``serve``, ``mcp``): the SDK's batching
  processor, in its own thread; at exit what is left is sent within :data:`FLUSH_SECONDS`.
- ``exit`` — a short command: the same, the SDK imported at its first audited event (never
  at start); what is left is sent as it exits, within :data:`FLUSH_SECONDS`.
- ``detached`` — the hooks, which an agent waits on before every tool call: the records are
  kept, and at exit handed on stdin to ``python -m loopkit.audit.otel`` started in a session
  of its own, with no terminal and no pipe of the agent's, which sends them; the hook exits
  at once. A gate never waits on a network.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import threading

from loopkit import __version__
from loopkit.clock import parse_iso

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FLUSH_SECONDS = 3.0
MODES = ("batch", "exit", "detached")
_SCALARS = (str, bool, int, float)


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the standard variables ask for OTLP export."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return bool(
        env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        or env.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "").strip()
    )


def installed() -> bool:
    """Whether the ``[otel]`` extra is there (looked up, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec("opentelemetry.exporter.otlp.proto.http") is not None
    except ModuleNotFoundError:
        return False


MISSING = (
    "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed: "
    "pip install 'loopkit[otel]' (audited events stay in .loopkit/audit.jsonl)"
)


def record_of(entry: dict[str, Any], seq: int | None, sha256: str | None) -> dict[str, Any]:
    """The log record's parts for an audit entry (plain values: the SDK is not needed to
    build it)."""
    attributes: dict[str, Any] = {}
    for key, value in entry.items():
        if key in ("at", "msg", "event") or value is None:
            continue
        if isinstance(value, _SCALARS):
            attributes[f"loopkit.{key}"] = value
        else:
            attributes[f"loopkit.{key}"] = json.dumps(value, default=str, sort_keys=True)
    if seq is not None:
        attributes["loopkit.audit.seq"] = seq
    if sha256 is not None:
        attributes["loopkit.audit.sha256"] = sha256
    return {
        "at": entry.get("at"),
        "event_name": f"loopkit.{entry.get('event')}",
        "body": str(entry.get("msg") or entry.get("event")),
        "attributes": attributes,
    }


def _nanoseconds(at: Any) -> int | None:
    if not isinstance(at, str):
        return None

    try:
        moment = parse_iso(at)
    except ValueError:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


class Shipper:
    """Sends audit records over OTLP/HTTP, the way ``mode`` says (see the module)."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
        self.mode = mode
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._provider: Any = None
        self._logger: Any = None
        self._processor: Any = None
        self._registered = False

    def emit(self, record: dict[str, Any]) -> None:
        with self._lock:
            if not self._registered:
                self._registered = True
                atexit.register(self.close)
            if self.mode == "detached":
                self._pending.append(record)
            else:
                self._emit(record)

    def _emit(self, record: dict[str, Any]) -> None:
        """Into the SDK (built on first use)."""
        if self._logger is None:
            self._build()
        from opentelemetry._logs import SeverityNumber

        self._logger.emit(
            timestamp=_nanoseconds(record["at"]),
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            body=record["body"],
            attributes=record["attributes"],
            event_name=record["event_name"],
        )

    def _build(self) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        resource = Resource.create({"service.name": "loopkit", "service.version": __version__})
        self._provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self._processor = BatchLogRecordProcessor(OTLPLogExporter())
        self._provider.add_log_record_processor(self._processor)
        self._logger = self._provider.get_logger("loopkit.audit", __version__)

    def close(self) -> None:
        """Send what is left, within :data:`FLUSH_SECONDS` (a detached process for a hook)."""
        with self._lock:
            pending, self._pending = self._pending, []
        if self.mode == "detached":
            if pending:
                _detach(pending)
            return
        try:
            for record in pending:
                self._emit(record)
            if self._processor is not None:
                # The SDK's shutdown sends what is left and may wait on the network for as long
                # as its own timeout: in a thread of its own, waited for FLUSH_SECONDS at most.
                done = threading.Thread(target=self._processor.shutdown, daemon=True)
                done.start()
                done.join(FLUSH_SECONDS)
        except Exception as exc:  # shipping must never fail the command
            _warn(f"OpenTelemetry export failed: {exc}")


def _detach(pending: list[dict[str, Any]]) -> None:
    """Start ``python -m loopkit.audit.otel`` in a session of its own, ``pending`` on its
    stdin, and return at once (it is never waited for)."""
    import subprocess

    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "loopkit.audit.otel"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        assert child.stdin is not None
        with child.stdin:
            child.stdin.write(json.dumps(pending, default=str).encode())
    except (OSError, ValueError) as exc:
        _warn(f"OpenTelemetry export not started: {exc}")


def _ship_from_stdin() -> int:
    """``python -m loopkit.audit.otel``: send the records given on stdin (a hook's)."""
    pending = json.loads(sys.stdin.buffer.read() or b"[]")
    shipper = Shipper("exit")
    for record in pending:
        shipper.emit(record)
    shipper.close()
    return 0


def _warn(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"loopkit: warning: {text}\n")


if __name__ == "__main__":  # last: what it calls is defined above
    sys.exit(_ship_from_stdin())
