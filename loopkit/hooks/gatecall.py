"""The gate's matched path: a tool call the fast path of :mod:`~loopkit.hooks.pretooluse`
could not clear, read whole and matched against the workspace's rules within
:data:`READ_TIME` (a timer stops even a regular expression's search); a call a rule holds
goes to a standing approval (:mod:`~loopkit.hooks.standing`) and else to the human
(:mod:`~loopkit.hooks.approve`) — those, and Claude's own question
(:mod:`~loopkit.hooks.question`), load only when they are needed: a call that was parsed
only because it holds a quote or an escape, and that no rule holds, never loads the store.

Fails closed, as the hook does: anything that goes wrong on a matched call denies it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from loopkit import discover
from loopkit.hooks.gatestamp import default_rules
from loopkit.hooks.pretooluse import DRIVEN, SUPERVISED, deny_on_error
from loopkit.hooks.rules import match
from loopkit.hooks.shell import Unreadable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.hooks.pretooluse import Dialect
    from loopkit.hooks.rules import Rules


def judge(raw: bytes, explicit: str | None, dialect: Dialect) -> int:
    """The hook's exit for the call ``raw``: 0 (no rule holds it, or the decision printed on
    stdout) or 2, denied, with one line on stderr."""
    deadline = time.monotonic() + READ_TIME
    _alarm(READ_TIME + 0.05)  # reading and matching never outlast it (SPEC §28: within 1 s)
    try:
        found = _read_and_match(raw, explicit, dialect, deadline)
    except _Late:
        return deny_on_error(
            f"{dialect.event} hook: the call could not be read within {READ_TIME:g} s"
        )
    finally:
        _alarm(0)
    if isinstance(found, int):
        return found
    event, workspace, hit, rules = found
    try:
        from loopkit.hooks import standing

        # read again for loopkit's own files: bounded as the first reading was (SPEC §28)
        again = time.monotonic() + READ_TIME
        need = standing.need_of(dialect, event, workspace, rules, deadline=again)
        passed = standing.passing(workspace, need, agent=dialect.agent, hit=hit) if need else None
        if passed is not None:
            decision = dialect.answer("allow", passed)
        else:
            from loopkit.hooks.approve import shown_call, verdict

            tool_name, tool_input = event["tool_name"], event.get("tool_input", {})
            shown = dialect.shown(tool_name, tool_input, shown_call)
            decision = dialect.answer(
                *verdict(workspace, event, hit, agent=dialect.agent, shown=shown, standing=need)
            )
    except Exception as exc:  # any failure on a matched call denies it
        return deny_on_error(f"{dialect.event} hook failed on a gated call: {exc}")
    if decision is None:
        return 0
    sys.stdout.write(json.dumps(decision) + "\n")
    sys.stdout.flush()  # a decision that cannot be given is a failure, and denies
    return 0


READ_TIME = 0.7  # seconds to read and match a call: past them it is denied (within 1 s in all)


class _Late(BaseException):  # never caught by an `except Exception` on the way
    """The call was not read and matched within :data:`READ_TIME`."""


def _late(signum: int, frame: object) -> None:
    raise _Late


def _alarm(seconds: float) -> None:
    """Raise :class:`_Late` in ``seconds`` (0: never) — even inside a regular expression's
    search, which looks at signals as it goes."""
    if seconds:
        signal.signal(signal.SIGALRM, _late)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def _read_and_match(
    raw: bytes, explicit: str | None, dialect: Dialect, deadline: float
) -> int | tuple[dict[str, Any], str, str, Rules]:
    """Read the call and match it: the hook's exit when that decides it (0: no rule holds
    it, or Claude's question answered; 2: denied), else ``(event, workspace, rule met,
    the workspace's rules)``."""
    try:
        event = json.loads(raw)
        tool_name = event["tool_name"]
        tool_input = event.get("tool_input", {})
        cwd = event.get("cwd") or os.getcwd()
        if not isinstance(tool_name, str) or not isinstance(cwd, str):
            raise TypeError("tool_name and cwd must be strings")
    except (ValueError, KeyError, TypeError) as exc:
        return deny_on_error(f"{dialect.event} hook: cannot read the call from stdin ({exc})")
    except RecursionError:
        return deny_on_error(f"{dialect.event} hook: the call is nested too deep to read")
    try:
        workspace = discover.find_workspace(explicit, cwd=cwd)
    except discover.NotAFolder as exc:
        return deny_on_error(str(exc))
    supervised = bool(os.environ.get(SUPERVISED))
    rules = default_rules(workspace, supervised=supervised)
    if rules is None:  # loopkit.toml changed, or has a [gate]: loaded whole (tomllib, config)
        from loopkit.hooks.gateconfig import load_rules

        rules = load_rules(workspace, supervised=supervised)
    if rules.broken is not None:
        return deny_on_error(
            f"{rules.broken} (until loopkit.toml loads, the gate denies every call: fix it)"
        )
    driven = os.environ.get(DRIVEN[0]) == DRIVEN[1]  # the supervisor asks Claude's questions
    if tool_name == "AskUserQuestion" and supervised and not driven:
        _alarm(0)  # asking is not reading: it takes as long as it takes
        try:
            from loopkit.hooks.question import decide as asked

            answer = asked(workspace, {**event, "cwd": cwd})
        except Exception as exc:
            return deny_on_error(f"PreToolUse hook could not ask Claude's question: {exc}")
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
            return 0
    try:
        hit = next(
            (h for name, given in dialect.calls(tool_name, tool_input)
             if (h := match(rules, name, given, cwd, deadline=deadline)) is not None),
            None,
        )  # fmt: skip
    except Unreadable as exc:
        return deny_on_error(f"{dialect.event} hook: {exc}")
    if hit is None:
        return 0
    return {**event, "cwd": event.get("cwd") or cwd}, workspace, hit, rules
