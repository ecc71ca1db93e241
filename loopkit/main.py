"""The console entry point.

``loopkit check`` is called at the head of every loop iteration, so it must start about as
fast as Python itself: its plain forms (``check``, ``check --json``, each optionally after
``-C DIR``) are answered here without importing click or anything else heavy; so is
``hook claude pretooluse``, which Claude Code runs before every tool call, the other hooks
the agents run unattended (``HOOKS`` of :mod:`loopkit.cli.commandtable`), and ``ps``
(``--json``), which a human or a script asks often. The everyday commands (``status``,
``reply``, ``unblock``, ``requests``, ``inbox``, ``escalate``, ``ask``; ``ps`` after root
options) and ``--help`` go to
:mod:`loopkit.cli.fastpath` next, which answers their well-formed lines without importing
click either (SPEC §20); every other command line goes to click, through
:func:`loopkit.cli.invoke.run`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _fast_check(args: list[str]) -> tuple[str | None, bool] | None:
    workspace: str | None = None
    if len(args) >= 2 and args[0] in ("-C", "--workspace"):
        workspace, args = args[1], args[2:]
    if args == ["check"]:
        return workspace, False
    if args == ["check", "--json"]:
        return workspace, True
    return None


def _fast_hook(args: list[str]) -> tuple[str, str | None] | None:
    """``[-C DIR] hook <agent> <event>`` of a hook command (``@runs_hook``: the gates run
    before every tool call the agent makes; Claude Code's other events with no terminal to
    wait on): ``("module:main", workspace)``, else None."""
    from loopkit.cli.commandtable import HOOKS

    workspace: str | None = None
    if len(args) >= 2 and args[0] in ("-C", "--workspace"):
        workspace, args = args[1], args[2:]
    where = HOOKS.get(tuple(args))
    return (where, workspace) if where is not None else None


def _fast_ps(args: list[str]) -> bool | None:
    """``ps`` and ``ps --json``: every loop of the machine, asked for often (SPEC §22)."""
    return {("ps",): False, ("ps", "--json"): True}.get(tuple(args))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    as_json = _fast_ps(args)
    if as_json is not None:
        from loopkit.commands.ps import print_loops

        return print_loops(as_json=as_json)
    hook = _fast_hook(args)
    if hook is not None:
        where, workspace = hook
        module, _, name = where.partition(":")
        __import__(module)
        answer: Callable[[str | None], int] = getattr(sys.modules[module], name)
        return answer(workspace)
    fast = _fast_check(args)
    if fast is not None:
        from loopkit.check import check

        return check(*fast)
    from loopkit.cli import fastpath

    code = fastpath.run(args)
    if code is not None:
        return code
    from loopkit.cli.invoke import run

    return run(args)
