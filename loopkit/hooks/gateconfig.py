"""The gate's configuration: ``loopkit.toml`` read whole, once per change of the file.

A ``loopkit.toml`` that does not load — a syntax error, a byte-order mark, a rule that is no
regular expression, an unknown key or table, any error ``loopkit run`` would refuse to
start with — leaves the gate no rules it can trust: every call the hooks see is denied with
the error (:meth:`~loopkit.hooks.rules.Rules.unloadable`; SPEC section 28), never judged by
the defaults in place of the user's rules.

Loading the config costs more than the rest of the hook, which runs before every tool call:
once a file has loaded, what the fast path needs is kept beside it
(:mod:`~loopkit.hooks.gatestamp`), and this module is loaded only for a call that fast path
could not clear.
"""

from __future__ import annotations

import os
from pathlib import Path

from loopkit import atomicfile, config
from loopkit.errors import ConfigError
from loopkit.hooks.gatestamp import CONFIG_NAME, RECORD, VERSION, default_rules, stat_line
from loopkit.hooks.guard import Guard
from loopkit.hooks.rules import Rules


def _remember(workspace: str, stamp: str, defaults: bool, blocked: str) -> None:
    """Keep the stat of a file that loaded (best effort: a workspace that cannot be written
    only loads it each time)."""
    kind = "defaults" if defaults else "own"
    text = f"{VERSION}\n{stamp} {kind} {blocked}\n"
    path = Path(workspace) / RECORD
    try:
        path.parent.mkdir(exist_ok=True)
        atomicfile.write_bytes(path, text.encode(), durable=False)
    except OSError:
        pass


def load_rules(workspace: str, *, supervised: bool = False) -> Rules:
    """The workspace's rules: ``[gate]`` of its loopkit.toml (any valid spelling), else the
    defaults; with ``supervised`` (under ``loopkit run``), loopkit's own files guarded
    (:mod:`~loopkit.hooks.guard`). A file that does not load: :meth:`Rules.unloadable`."""
    defaults = default_rules(workspace, supervised=supervised)
    if defaults is not None:
        return defaults
    stamp = stat_line(workspace)
    path = os.path.join(workspace, CONFIG_NAME)
    if stamp is None:
        return Rules.unloadable(f"{path}: cannot be read")
    try:
        loaded = config.load(Path(workspace))
    except ConfigError as exc:
        return Rules.unloadable(str(exc))
    gate = loaded.gate
    own = gate.rules is not None or gate.protect is not None or gate.extend_defaults
    blocked = loaded.escalation.blocked_file
    if stamp != "absent" and stamp == stat_line(workspace):  # unchanged while it was read
        _remember(workspace, stamp, not own, blocked)
    rules = list(gate.rules) if gate.rules is not None else None
    protect = list(gate.protect) if gate.protect is not None else None
    guard = _guard(workspace, blocked) if supervised else None
    return Rules.build(rules, protect, gate.extend_defaults, guard=guard)


def _guard(workspace: str, blocked: str) -> Guard:
    return Guard(workspace, blocked)
