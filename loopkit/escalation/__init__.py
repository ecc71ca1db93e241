"""Escalation: raising a block and asking a human (SPEC sections 3 and 4).

- :mod:`~loopkit.escalation.escalator`: persist → BLOCKED.md → send → record (steps 1-4).
- :mod:`~loopkit.escalation.blockfile`: rendering, creating and reading ``BLOCKED.md``.
- :mod:`~loopkit.escalation.marker`: the request marker and the head, standard library only
  (``loopkit check`` reads them).
- :mod:`~loopkit.escalation.ask`, :mod:`~loopkit.escalation.policy`,
  :mod:`~loopkit.escalation.rubric`: ``loopkit ask`` — needs a human? then the mobile rubric.
- :mod:`~loopkit.escalation.gate`: ``loopkit gate``; :mod:`~loopkit.escalation.dismiss`: the
  ghosts ``loopkit dismiss`` closes. (``unblock`` and ``dismiss`` themselves come in by the
  answering service's door: :mod:`loopkit.answering.service`.)

Nothing is imported here: ``loopkit check`` imports :mod:`~loopkit.escalation.marker` alone.
"""
