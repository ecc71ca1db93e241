"""loopkit: supervise a long-running AI coding-agent loop and ask a human when it is stuck.

Nothing is imported here: ``loopkit check`` must start fast.
"""

__version__ = "0.1.0"
