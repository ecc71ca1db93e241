"""Only a human answers (SPEC section 11): telling a supervised agent's processes apart.

Every command ``loopkit run`` starts carries ``LOOPKIT_AGENT_SESSION`` (a token per
supervisor run) and, where a writable cgroup v2 exists, runs in a cgroup named
``loopkit-…``; its descendants inherit both. ``loopkit reply``, ``unblock`` and the inbox
refuse an answer that comes from such a process (exit 77). A process is inside when it
carries the variable, or when it sits in a loopkit cgroup — which catches an agent that
cleared its environment (``env -u``) and one that left its session (``setsid``).

For the inbox the question is about the *browser's* process: on loopback the connection's
peer is found in ``/proc/net/tcp*`` by its port, its owner among ``/proc/*/fd``, and that
process is asked the same question. This guards against an agent answering by accident or
out of helpfulness; a hostile process of the same Unix user can read anything the user can,
so it is not a wall against that — run the agent as another user, or in a container.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SESSION_ENV = "LOOPKIT_AGENT_SESSION"
# Set for an agent the supervisor speaks with (Claude Code in stream-json, SPEC section 23):
# the supervisor answers its dialogs, so its hooks leave them alone.
DRIVER_ENV = "LOOPKIT_AGENT_DRIVER"
DRIVER = "stream-json"


def driven() -> bool:
    """Whether this process runs under an agent the supervisor speaks with."""
    return os.environ.get(DRIVER_ENV) == DRIVER and bool(os.environ.get(SESSION_ENV))


REFUSAL = (
    "an agent cannot answer its own question; a human answers from the phone, the inbox or a "
    "terminal of their own"
)
_CGROUP_PREFIX = "loopkit-"


def _environ_has(pid: int | str) -> bool:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return any(item.startswith(SESSION_ENV.encode() + b"=") for item in raw.split(b"\0"))


def _in_loopkit_cgroup(pid: int | str) -> bool:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        if line.startswith("0::"):
            return any(part.startswith(_CGROUP_PREFIX) for part in line[3:].split("/"))
    return False


def inside(environ: Mapping[str, str] | None = None) -> bool:
    """True when this process runs inside a supervised agent's session."""
    environ = os.environ if environ is None else environ
    return bool(environ.get(SESSION_ENV)) or _in_loopkit_cgroup("self")


def process_inside(pid: int) -> bool:
    return _environ_has(pid) or _in_loopkit_cgroup(pid)


def _socket_inode(client_host: str, client_port: int, server_port: int) -> str | None:
    """The inode of the client's end of a loopback TCP connection to ``server_port``."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            local, remote = fields[1], fields[2]
            if (
                int(local.rsplit(":", 1)[1], 16) == client_port
                and int(remote.rsplit(":", 1)[1], 16) == server_port
            ):
                return fields[9]
    return None


def _owner(inode: str) -> int | None:
    wanted = f"socket:[{inode}]"
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                if os.readlink(fd.path) == wanted:
                    return int(entry.name)
        except OSError:
            continue
    return None


def connection_from_agent(client: Any, server_port: int | None) -> bool:
    """True when a loopback HTTP client's process is inside an agent's session.

    ``client`` is the ASGI client (host, port). A client that is not on loopback, or whose
    process cannot be found (another user's, a container's), is not judged here: the token
    it needed to get this far is the human's.
    """
    if client is None or server_port is None:
        return False
    host, port = client[0], client[1]
    if host not in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        return False
    inode = _socket_inode(host, int(port), int(server_port))
    owner = _owner(inode) if inode and inode != "0" else None
    return owner is not None and owner != os.getpid() and process_inside(owner)
