"""The audit trail (SPEC section 30): every question, answer, gate decision, rule use and
policy answer, as a hash-chained line of ``.loopkit/audit.jsonl`` (:mod:`~loopkit.audit.chain`),
and — with the standard ``OTEL_EXPORTER_OTLP_*`` variables — as OpenTelemetry log records
(:mod:`~loopkit.audit.otel`).

Nothing here is called at an event's call site: :mod:`loopkit.log` (and the structlog chain of
the long-running processes, :mod:`loopkit.structured`) hands every event it writes to
:class:`~loopkit.audit.sink.Sink`, which keeps the ones :data:`~loopkit.audit.sink.AUDITED`
names.
"""
