"""The supervisor, ``loopkit run`` (SPEC section 6).

- :mod:`~loopkit.supervisor.loop`: ``Supervisor`` — the lock, signals, reload and the loop;
  it owns its parts and its two phases.
- :mod:`~loopkit.supervisor.parts`: ``Parts`` (config, store, runner, state …) and ``Step``,
  what a phase returns.
- :mod:`~loopkit.supervisor.iteration`: one iteration (env → preflight → agent → verify → done).
- :mod:`~loopkit.supervisor.blocked`: the blocked phase (wait, timeout, apply the answer).
- :mod:`~loopkit.supervisor.triggers`: the questions the supervisor asks itself.
- :mod:`~loopkit.supervisor.containment`: nothing a command starts outlives it (its token,
  cgroup and record; :mod:`~loopkit.supervisor.cgroup`, :mod:`~loopkit.supervisor.procfs`);
  :mod:`~loopkit.supervisor.leftovers`: what a supervisor killed with ``kill -9`` left;
  :mod:`~loopkit.supervisor.prepared`: the next command's process, made ahead in its cgroup.
- :mod:`~loopkit.supervisor.runner`, :mod:`~loopkit.supervisor.status`,
  :mod:`~loopkit.supervisor.tasks`, :mod:`~loopkit.supervisor.iterlog`: running a command,
  ``loopkit status``, the current task, the iteration logs.

While blocked it runs the Telegram relay (:mod:`loopkit.inbox.relay`); its state file and
lock are :mod:`loopkit.workspace.state`.
"""
