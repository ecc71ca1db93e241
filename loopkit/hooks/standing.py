"""A gated call and the standing approvals of ``.loopkit/allow.toml`` (SPEC section 30;
:mod:`loopkit.escalation.allow`): what a call needs of a rule, and whether one passes it.

Read only once a call has met a gate rule (:mod:`~loopkit.hooks.pretooluse`): the no-match
path never opens ``allow.toml``. A call the guard holds (loopkit's own files under
``loopkit run``) needs what no rule can give: it is always asked.
"""

from __future__ import annotations

import os
import sys

from loopkit import log
from loopkit.errors import LoopkitError
from loopkit.escalation import allow
from loopkit.hooks.rules import FILE_TOOLS, Rules, match
from loopkit.redact import Redactor

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.hooks.pretooluse import Dialect

_log = log.get_logger("loopkit.gate")
_SHELL = "Bash"  # the shell tool, in the rules' vocabulary (each dialect's calls() says it)


def need_of(
    dialect: Dialect,
    event: dict[str, Any],
    workspace: str,
    rules: Rules,
    *,
    deadline: float | None = None,
) -> allow.Wanted | None:
    """What the call needs of a standing rule, or None when none may be offered or used:
    a tool that is neither a shell nor a file tool, a place outside the workspace, or a
    call touching loopkit's own files. ``deadline``: the reading of the call for those is
    bounded as the first reading was (past it, the reader raises: the call is denied)."""
    cwd = str(event.get("cwd") or workspace)
    commands: list[str] = []
    paths: list[str] = []
    entries = dialect.calls(event["tool_name"], event.get("tool_input", {}))
    own = Rules((), (), (), guard=rules.guard) if rules.guard is not None else None
    for name, given in entries:
        if own is not None and match(own, name, given, cwd, deadline=deadline) is not None:
            return None  # loopkit's own files: a human, every time
        if not isinstance(given, dict):
            return None
        if name == _SHELL and isinstance(given.get("command"), str):
            commands.append(given["command"])
        elif name in FILE_TOOLS and isinstance(given.get(FILE_TOOLS[name]), str):
            paths.append(given[FILE_TOOLS[name]])
        else:
            return None
    return allow.wanted(workspace, cwd, commands, paths)


def passing(workspace: str, need: allow.Wanted, *, agent: str, hit: str) -> str | None:
    """The reason a standing rule lets the call through — after a ``gate_rule_used`` event
    naming it — or None: no rule does (a file that cannot be read passes nothing)."""
    try:
        found = allow.find(workspace, need)
    except LoopkitError as exc:
        sys.stderr.write(f"loopkit: warning: {exc}; standing approvals are not used\n")
        return None
    if found is None:
        return None
    number, rule = found
    events = os.path.join(workspace, ".loopkit", "events.jsonl")
    from pathlib import Path

    log.setup(
        Path(events), Redactor(()), stream=sys.stderr, console_level="warning", ship="detached"
    )
    said = f"allowed always here by rule {number} of {allow.FILE} ({rule.shown()})"
    _log.info(
        "gate_rule_used",
        **rule.logged(number),
        agent=agent,
        gate_rule=hit,
        workspace=workspace,
        msg=f"{agent}'s call passed by standing rule {number}: {rule.shown()}",
        _console=False,
    )
    return said
