"""Where a command's work lives, declared once, on its click command (SPEC §27).

A click command of loopkit is its declaration — name, options, help — and one line saying
which function does the work: ``@runs("loopkit.commands.answer:reply")`` (a body of
:mod:`loopkit.commands`, called with the App and click's parameters as they are) or
``@runs_hook("loopkit.hooks.codex:main")`` (an agent's hook, called with the ``-C`` folder).
The body is imported when the command runs. ``docs/generate.py`` reads these declarations to
write the fast path's tables (:mod:`loopkit.cli.commandtable`): nothing about a command is
written twice by hand.
"""

from __future__ import annotations

import functools
import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import click

    from loopkit.commands.app import App

BODY = "loopkit_body"  # the attribute of a callback naming its body
HOOK = "loopkit_hook"  # the attribute of a callback naming its hook's main


def load(where: str) -> Callable[..., int]:
    """The function at ``where`` ("module:name"), its module imported now."""
    module, _, name = where.partition(":")
    function: Callable[..., int] = getattr(importlib.import_module(module), name)
    return function


def runs(where: str) -> Callable[[Callable[..., Any]], Callable[..., int]]:
    """The command's body is ``where``: called as ``body(app, **params)``, click's parameters
    as they are. The decorated function gives the command its name and help (its own code
    is never run). Put it under ``@click.pass_obj``."""

    def declare(function: Callable[..., Any]) -> Callable[..., int]:
        @functools.wraps(function)
        def callback(app: App, **params: Any) -> int:
            return load(where)(app, **params)

        setattr(callback, BODY, where)
        return callback

    return declare


def runs_unless_subcommand(where: str) -> Callable[[Callable[..., Any]], Callable[..., int]]:
    """As :func:`runs`, for a group that does its own work when no subcommand is given
    (``loopkit requests``). Put it under ``@click.pass_context``."""

    def declare(function: Callable[..., Any]) -> Callable[..., int]:
        @functools.wraps(function)
        def callback(ctx: click.Context, **params: Any) -> int:
            if ctx.invoked_subcommand is not None:
                return 0
            return load(where)(ctx.obj, **params)

        setattr(callback, BODY, where)
        return callback

    return declare


def runs_hook(where: str) -> Callable[[Callable[..., Any]], Callable[..., int]]:
    """The hook command's work is ``where``, a hook's ``main(workspace)``: called with the
    ``-C`` folder as given (None without one). ``loopkit.main`` answers these command lines
    before click is imported (SPEC §20). Put it under ``@click.pass_obj``."""

    def declare(function: Callable[..., Any]) -> Callable[..., int]:
        @functools.wraps(function)
        def callback(app: App) -> int:
            return load(where)(str(app.explicit) if app.explicit else None)

        setattr(callback, HOOK, where)
        return callback

    return declare
