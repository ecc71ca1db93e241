"""Requests: the record of one question to a human, and its answer (SPEC section 4).

- :mod:`~loopkit.requests.record`: ``Request``, the typed, versioned record.
- :mod:`~loopkit.requests.models`: what a record holds — its ``block`` state, ``Option``,
  ``DeliveryAttempt``, ``Resolution``.
- :mod:`~loopkit.requests.migrate`: records of an earlier version, upgraded on read.
- :mod:`~loopkit.requests.shape`: the shape a record must have before any code touches it.
- :mod:`~loopkit.requests.store`: ``RequestStore``, the locked read-modify-write.
- :mod:`~loopkit.requests.replies`: a reply's text → a decision (pure).
- :mod:`~loopkit.requests.answer`: recording an answer, exactly once; outcomes.
- :mod:`~loopkit.requests.table`: ``loopkit requests``.
- :mod:`~loopkit.requests.outcome`: ``loopkit requests wait``.

Nothing is imported here, so importing one module costs only that module.
"""
