"""The gate's configuration: ``loopkit.toml`` read whole, once per change of the file.

A ``loopkit.toml`` that does not load — a syntax error, a byte-order mark, a rule that is no
regular expression, an unknown key or table, any error ``loopkit run`` would refuse to
start with — leaves the gate no rules it can trust: every call the hooks see is denied with
the error (:meth:`~loopkit.hooks.rules.Rules.unloadable`; SPEC section 28), never judged by
the defaults in place of the user's rules.

Loading the config costs more than the rest of the hook, which runs before every tool call:
once a file has loaded, its stat (device, inode, size, modification and change times — the
change time no process can set back) is kept in ``.loopkit/gate-config`` with what the hook's
fast path needs: whether it leaves the default rules, and the block file's name. While the
file's stat is the same, :func:`defaults_hold` answers from there with two system calls.
Anything else — no such record, another stat, a record that cannot be read — loads the
file again.
"""

from __future__ import annotations

import os

from loopkit.hooks.rules import Rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.hooks.guard import Guard

CONFIG_NAME = "loopkit.toml"
RECORD = os.path.join(".loopkit", "gate-config")
_VERSION = "gate-config 1"


def _stamp(workspace: str) -> str | None:
    """loopkit.toml's stat as one line; ``"absent"`` when there is none; None when it
    cannot be looked at."""
    try:
        info = os.stat(os.path.join(workspace, CONFIG_NAME))
    except FileNotFoundError:
        return "absent"
    except OSError:
        return None
    return f"{info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns}"


def defaults_hold(workspace: str) -> str | None:
    """The block file's name when ``loopkit.toml`` surely leaves the default rules — there
    is none, or it is as it was when it last loaded and had no ``[gate]`` of its own — else
    None (load it)."""
    stamp = _stamp(workspace)
    if stamp == "absent":
        return "BLOCKED.md"
    if stamp is None:
        return None
    try:
        fd = os.open(os.path.join(workspace, RECORD), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        text = os.read(fd, 4096).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    head, _, rest = text.partition("\n")
    fields = rest.rstrip("\n").split(" ", 6)
    if head != _VERSION or len(fields) != 7 or " ".join(fields[:5]) != stamp:
        return None
    return fields[6] if fields[5] == "defaults" and fields[6] else None


def _remember(workspace: str, stamp: str, defaults: bool, blocked: str) -> None:
    """Keep the stat of a file that loaded (best effort: a workspace that cannot be written
    only loads it each time)."""
    from pathlib import Path

    from loopkit import atomicfile

    kind = "defaults" if defaults else "own"
    text = f"{_VERSION}\n{stamp} {kind} {blocked}\n"
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
    blocked = defaults_hold(workspace)
    if blocked is not None:
        return Rules.build(guard=_guard(workspace, blocked) if supervised else None)
    stamp = _stamp(workspace)
    path = os.path.join(workspace, CONFIG_NAME)
    if stamp is None:
        return Rules.unloadable(f"{path}: cannot be read")
    from pathlib import Path

    from loopkit import config
    from loopkit.errors import ConfigError

    try:
        loaded = config.load(Path(workspace))
    except ConfigError as exc:
        return Rules.unloadable(str(exc))
    gate = loaded.gate
    own = gate.rules is not None or gate.protect is not None or gate.extend_defaults
    blocked = loaded.escalation.blocked_file
    if stamp != "absent" and stamp == _stamp(workspace):  # unchanged while it was read
        _remember(workspace, stamp, not own, blocked)
    rules = list(gate.rules) if gate.rules is not None else None
    protect = list(gate.protect) if gate.protect is not None else None
    guard = _guard(workspace, blocked) if supervised else None
    return Rules.build(rules, protect, gate.extend_defaults, guard=guard)


def _guard(workspace: str, blocked: str) -> Guard:
    from loopkit.hooks.guard import Guard

    return Guard(workspace, blocked)
