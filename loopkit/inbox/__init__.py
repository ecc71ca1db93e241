"""The inbox: every open question of this machine's loops, wherever they run (SPEC §10–11).

- :mod:`~loopkit.inbox.entries`: ``loopkit inbox`` — the open requests of every registered
  workspace, oldest first, and finding the workspace that holds a request.
- :mod:`~loopkit.inbox.serve`: ``loopkit serve``, the per-user daemon that runs the rest.
- :mod:`~loopkit.inbox.web`, :mod:`~loopkit.inbox.pages`, :mod:`~loopkit.inbox.auth`: the web
  inbox — its routes, what its pages show, and who may open it.
- :mod:`~loopkit.inbox.relay`: the Telegram relay (answers from the phone).
"""
