"""The everyday commands' bodies, free of click (SPEC §20): each takes the
:class:`~loopkit.commands.app.App` (what every command is handed: :mod:`loopkit.commands.app`)
and its parsed parameters, writes its output and returns the exit.

:mod:`loopkit.cli.fastpath` runs them straight from a command line it is sure of, without
importing click (~25 ms, twice ``python -c pass``); the click commands of :mod:`loopkit.cli`
call the same functions, so each command has one body.

- :mod:`~loopkit.commands.status`: ``status``.
- :mod:`~loopkit.commands.answer`: ``reply`` and ``unblock`` (and who may answer).
- :mod:`~loopkit.commands.requests`: the ``requests`` listing.
- :mod:`~loopkit.commands.inbox`: ``inbox``.
- :mod:`~loopkit.commands.escalate`: ``escalate``.
- :mod:`~loopkit.commands.ask`: ``ask``.
- :mod:`~loopkit.commands.ps`: ``ps`` (its plain forms are :mod:`loopkit.main`'s).
- :mod:`~loopkit.commands.echo`: their one way to write a line, as ``click.echo`` does.
"""
