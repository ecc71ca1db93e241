"""Only a human answers (SPEC section 11): telling a supervised agent's processes apart.

Every command ``loopkit run`` starts carries ``LOOPKIT_AGENT_SESSION`` (a token per
supervisor run) and, where a writable cgroup v2 exists, runs in a cgroup named
``loopkit-…``; its descendants inherit both. And the supervisor is a child subreaper that
names itself ``loopkit-run`` while it runs: every process its agent starts stays its
descendant, however it detaches (``setsid``, a double fork: an orphan goes to the nearest
subreaper, not to init). The answering service (:mod:`loopkit.answering.who`) refuses an
answer from such a process (exit 77) — from ``reply``, ``unblock``, ``dismiss``, the Python
API and the inbox alike. A process is inside when it carries the variable, sits in a
loopkit cgroup, or descends from a running supervisor: ``env -u``, ``env -i`` and
``setsid`` change none of the last two, and the last needs no cgroup (a non-root user,
other systems).

For the inbox the question is about the *browser's* process: on loopback the connection's
peer is found in ``/proc/net/tcp*`` by its port, its owner among ``/proc/*/fd``, and that
process is asked the same question.

Where it ends: a process of the same Unix user *outside* the loop's process tree — one the
agent had started elsewhere before, a cron job it wrote, a shell it reaches over ssh — is
not told apart from the human, and can read and write what the user can. To make it a
wall, run the agent as another Unix user (its own home, no access to yours) or in a
container.
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


SUPERVISOR_NAME = "loopkit-run"  # the supervisor's thread name while it runs (prctl)


def _parent(pid: int) -> int | None:
    """``pid``'s parent, from ``/proc/<pid>/stat`` (its name may hold spaces and parens)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def _names(pid: int) -> set[str]:
    """The names of ``pid``'s threads (a supervisor may run in any of them)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return set()
    found = set()
    for task in tasks:
        try:
            found.add(Path(f"/proc/{pid}/task/{task}/comm").read_text().strip())
        except OSError:
            continue
    return found


def under_supervisor(pid: int) -> bool:
    """True when a ``loopkit run`` supervisor is among ``pid``'s ancestors (not ``pid``
    itself). The supervisor is a child subreaper while it runs, so a process its agent
    started stays below it whatever it does — ``setsid``, a double fork, ``env -i`` — and
    it names itself :data:`SUPERVISOR_NAME`, which no other process can change."""
    seen: set[int] = set()
    current = _parent(pid)
    while current is not None and current > 1 and current not in seen:
        seen.add(current)
        if SUPERVISOR_NAME in _names(current):
            return True
        current = _parent(current)
    return False


def inside(environ: Mapping[str, str] | None = None) -> bool:
    """True when this process runs inside a supervised agent's session: it carries the
    session's variable, sits in a loopkit cgroup, or descends from a running supervisor."""
    environ = os.environ if environ is None else environ
    if environ.get(SESSION_ENV) or _in_loopkit_cgroup("self"):
        return True
    return under_supervisor(os.getpid())


def process_inside(pid: int) -> bool:
    return _environ_has(pid) or _in_loopkit_cgroup(pid) or under_supervisor(pid)


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
