"""The command line: parse, build the Config, call one domain function, map errors to exits.

- :mod:`~loopkit.cli.invoke`: ``run(args)``, the one place errors become exit codes.
- :mod:`~loopkit.cli.app`: the ``loopkit`` group and its explicit command list.
- :mod:`~loopkit.cli.context`: ``App``, what every command is handed.
- :mod:`~loopkit.cli.loop` (``run``, ``status``), :mod:`~loopkit.cli.block` (``escalate``,
  ``check``, ``resend``), :mod:`~loopkit.cli.ask` (``ask``, ``gate``),
  :mod:`~loopkit.cli.answer` (``reply``, ``unblock``), :mod:`~loopkit.cli.requests`
  (``requests``), :mod:`~loopkit.cli.inbox` (``inbox``, ``serve``), :mod:`~loopkit.cli.setup`
  (``init``, ``doctor``, ``send-test``), :mod:`~loopkit.cli.hook`, :mod:`~loopkit.cli.mcp`,
  :mod:`~loopkit.cli.fleet`.

Click's own usage errors exit 64, not click's default 2: here 2 means *blocked*.
"""
