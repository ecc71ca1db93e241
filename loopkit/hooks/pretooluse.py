"""``loopkit hook claude pretooluse``: Claude Code's PreToolUse hook (SPEC section 12).

It runs before every tool call, so the path of a call that matches no rule imports only
``json``, ``re``, ``fnmatch`` and loopkit's own standard-library helpers (``discover``,
:mod:`~loopkit.hooks.rules`) and parses ``loopkit.toml`` only when it has a ``[gate]``
table: no output, exit 0, about as fast as ``python -c pass``. A match goes to
:mod:`~loopkit.hooks.approve`, which asks for an approval bound to this exact call.
Anything that goes wrong on a matched call — or on input that cannot be read, which could
hide one — denies it (exit 2, one line on stderr): a broken gate never lets a P0 call
through.
"""

from __future__ import annotations

import json
import os
import sys

from loopkit import discover
from loopkit.hooks.rules import Rules, match

MAX_INPUT = 8 * 1024 * 1024


def _deny_on_error(message: str) -> int:
    sys.stderr.write(f"loopkit: {message}; the call is denied\n")
    return 2


def load_rules(workspace: str) -> Rules:
    """``[gate]`` from the workspace's loopkit.toml, else the defaults. A
    broken table keeps the defaults and remembers why (said on a match)."""
    path = os.path.join(workspace, "loopkit.toml")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return Rules.build()
    try:
        text = os.read(fd, 1 << 20).decode("utf-8", "replace") if _regular(fd) else ""
    finally:
        os.close(fd)
    if "[gate]" not in text:
        return Rules.build()
    from pathlib import Path

    from loopkit import config
    from loopkit.errors import ConfigError

    try:
        loaded = config.load(Path(workspace))
    except ConfigError as exc:
        return Rules(Rules.build().commands, problems=(str(exc),))
    gate = loaded.gate
    rules = list(gate.rules) if gate.rules is not None else None
    protect = list(gate.protect) if gate.protect is not None else None
    return Rules.build(rules, protect, gate.extend_defaults)


def _regular(fd: int) -> bool:
    import stat

    return stat.S_ISREG(os.fstat(fd).st_mode)


def main(explicit: str | None = None) -> int:
    try:
        event = json.loads(sys.stdin.buffer.read(MAX_INPUT))
        tool_name = event["tool_name"]
        tool_input = event.get("tool_input", {})
        cwd = event.get("cwd") or os.getcwd()
        if not isinstance(tool_name, str) or not isinstance(cwd, str):
            raise TypeError("tool_name and cwd must be strings")
    except (ValueError, KeyError, TypeError) as exc:
        return _deny_on_error(f"PreToolUse hook: cannot read the call from stdin ({exc})")
    try:
        workspace = discover.find_workspace(explicit, cwd=cwd)
    except discover.NotAFolder as exc:
        return _deny_on_error(str(exc))
    rules = load_rules(workspace)
    hit = match(rules, tool_name, tool_input, cwd)
    if hit is None:
        return 0
    try:
        from loopkit.hooks.approve import decide

        if rules.problems:
            return _deny_on_error(f"{rules.problems[0]} (fix loopkit.toml's [gate] table)")
        decision = decide(workspace, event, hit)
    except Exception as exc:  # any failure on a matched call denies it
        return _deny_on_error(f"PreToolUse hook failed on a gated call: {exc}")
    sys.stdout.write(json.dumps(decision) + "\n")
    return 0
