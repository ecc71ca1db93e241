"""Setting a workspace up and checking it.

- :mod:`~loopkit.setup.scaffold`: ``loopkit init`` — a starting ``loopkit.toml`` and the
  ``BLOCKED.md`` template.
- :mod:`~loopkit.setup.doctor`: ``loopkit doctor`` and ``loopkit send-test`` — each problem
  with its fix.
"""
