"""The console entry point.

``loopkit check`` is called at the head of every loop iteration, so it must start about as
fast as Python itself: its plain forms (``check``, ``check --json``, each optionally after
``-C DIR``) are answered here without importing click or anything else heavy; so is
``hook claude pretooluse``, which Claude Code runs before every tool call, and the other
hooks it runs unattended (``permission-request``, ``stop-failure``). Every other command
line goes to :mod:`loopkit.cli`.
"""

from __future__ import annotations

import sys


def _fast_check(args: list[str]) -> tuple[str | None, bool] | None:
    workspace: str | None = None
    if len(args) >= 2 and args[0] in ("-C", "--workspace"):
        workspace, args = args[1], args[2:]
    if args == ["check"]:
        return workspace, False
    if args == ["check", "--json"]:
        return workspace, True
    return None


HOOKS = ("pretooluse", "permission-request", "stop-failure")


def _fast_hook(args: list[str]) -> tuple[str, str | None] | None:
    """``[-C DIR] hook claude EVENT``: pretooluse runs before every tool call Claude Code
    makes; the others with no terminal to wait on."""
    workspace: str | None = None
    if len(args) >= 2 and args[0] in ("-C", "--workspace"):
        workspace, args = args[1], args[2:]
    if len(args) == 3 and args[:2] == ["hook", "claude"] and args[2] in HOOKS:
        return args[2], workspace
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    hook = _fast_hook(args)
    if hook is not None:
        event, workspace = hook
        if event == "permission-request":
            from loopkit.hooks.permission import main as permission

            return permission(workspace)
        if event == "stop-failure":
            from loopkit.hooks.stopfailure import main as stop_failure

            return stop_failure(workspace)
        from loopkit.hooks.pretooluse import main as pretooluse

        return pretooluse(workspace)
    fast = _fast_check(args)
    if fast is not None:
        from loopkit.check import check

        return check(*fast)
    from loopkit.cli.invoke import run

    return run(args)
