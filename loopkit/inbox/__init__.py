"""The inbox: every open question of this machine's loops, wherever they run (SPEC §10–11).

- :mod:`~loopkit.inbox.entries`: ``loopkit inbox`` — the open requests of every registered
  workspace, oldest first, and finding the workspace that holds a request.
"""
