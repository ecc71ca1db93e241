"""What the gate's fast path knows of ``loopkit.toml`` without loading it.

Once a ``loopkit.toml`` has loaded (:func:`loopkit.hooks.gateconfig.load_rules`), its stat
(device, inode, size, modification and change times — the change time no process can set
back) is kept in ``.loopkit/gate-config`` with whether it leaves the default rules, and the
block file's name. While the file's stat is the same, :func:`defaults_hold` answers from
there with two system calls. Anything else — no such record, another stat, a record that
cannot be read — says "load it". No ``re``, no config loader: this runs before every tool
call an agent makes.
"""

from __future__ import annotations

import os

from loopkit.hooks.guard import Guard
from loopkit.hooks.rules import Rules

CONFIG_NAME = "loopkit.toml"
RECORD = os.path.join(".loopkit", "gate-config")
VERSION = "gate-config 1"


def stat_line(workspace: str) -> str | None:
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
    stamp = stat_line(workspace)
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
    if head != VERSION or len(fields) != 7 or " ".join(fields[:5]) != stamp:
        return None
    return fields[6] if fields[5] == "defaults" and fields[6] else None


def default_rules(workspace: str, *, supervised: bool) -> Rules | None:
    """The default rules when ``loopkit.toml`` surely leaves them (:func:`defaults_hold`) —
    with loopkit's own files guarded under ``loopkit run`` — else None: load the file
    (:func:`loopkit.hooks.gateconfig.load_rules`)."""
    blocked = defaults_hold(workspace)
    if blocked is None:
        return None
    return Rules.build(guard=Guard(workspace, blocked) if supervised else None)
