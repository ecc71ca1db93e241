"""The machine's loopkit home (SPEC section 10): what one user's loops share on one machine.

``LOOPKIT_HOME`` (default ``$XDG_STATE_HOME/loopkit``, else ``~/.local/state/loopkit``),
mode 0700, holds ``workspaces/<id>.json`` — one per workspace that ran a supervisor or
raised a block: its absolute path, repo name and when it was last seen. A workspace
registers itself on every ``run``, ``escalate``, ``ask`` and ``gate``; a path that no longer
exists is dropped when the registry is read. Registering never stops a block: a home that
cannot be written is reported once and skipped.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from loopkit import atomicfile, clock, readfile
from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def home(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    named = environ.get("LOOPKIT_HOME", "").strip()
    if named:
        return Path(named).expanduser().absolute()
    state = environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state).expanduser() if state else Path.home() / ".local" / "state"
    return (base / "loopkit").absolute()


def _ensure(folder: Path) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(folder, 0o700)
    return folder


@record(frozen=True, slots=True)
class Registered:
    path: Path
    repo: str
    last_seen: str


def sha256_hex(text: str) -> str:
    """The SHA-256 of ``text`` (UTF-8), in hex, by CPython's own SHA-256 (`_sha2` from 3.12,
    `_sha256` before): hashlib's import loads OpenSSL (~12 M instructions, ~2 ms of a short
    command); hashlib's is the same digest where neither is."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            from hashlib import sha256
    digest: str = sha256(text.encode()).hexdigest()
    return digest


def workspace_id(path: Path) -> str:
    """The first 16 hex digits of the path's SHA-256 (its registry file's name)."""
    return sha256_hex(str(path))[:16]


class Registry:
    """``LOOPKIT_HOME/workspaces/``: the workspaces of this machine's user."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or home()
        self.folder = self.root / "workspaces"

    def register(self, path: Path, repo: str) -> None:
        """Record ``path``, or refresh when it was last seen (SPEC §10); raises OSError when the
        home cannot be written. A new or changed entry is written durably; refreshing the
        time of one already there is atomic but not fsynced (two fsyncs of every
        ``escalate`` saved: a power cut can only bring back an older time)."""
        file = self.folder / f"{workspace_id(path)}.json"
        try:
            known = readfile.json_document(readfile.read_text(file))
        except (OSError, ValueError):
            known = None
        refresh = (
            isinstance(known, dict)
            and known.get("path") == str(path)
            and known.get("repo") == repo
            and isinstance(known.get("last_seen"), str)
        )
        if not refresh:
            _ensure(self.root)
            _ensure(self.folder)
        entry = {"path": str(path), "repo": repo, "last_seen": clock.iso_millis()}
        atomicfile.write_json(file, entry, mode=0o600, durable=not refresh)

    def workspaces(self) -> list[Registered]:
        """Every registered workspace that still exists, least recently seen first; the
        entries of folders that are gone are dropped."""
        found: list[Registered] = []
        try:
            files = sorted(self.folder.glob("*.json"))
        except OSError:
            return []
        for file in files:
            try:
                data = readfile.json_document(readfile.read_text(file))
                entry = Registered(Path(data["path"]), str(data["repo"]), str(data["last_seen"]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if not entry.path.is_dir():
                with contextlib.suppress(OSError):
                    file.unlink()  # a workspace that was deleted
                continue
            found.append(entry)
        return sorted(found, key=lambda e: e.last_seen)


def machine(root: Path | None = None) -> str:
    """This machine's name in a fleet: the host name and an id made once in
    ``LOOPKIT_HOME/machine.id`` (two homes on one host are two machines)."""
    import secrets
    import socket

    path = (root or home()) / "machine.id"
    try:
        made = readfile.read_text(path).strip()
    except (OSError, UnicodeDecodeError):
        made = ""
    if not made:
        with contextlib.suppress(OSError):
            _ensure(path.parent)
            atomicfile.create_text(path, secrets.token_hex(4) + "\n", mode=0o600)
        try:
            made = readfile.read_text(path).strip()
        except (OSError, UnicodeDecodeError):
            made = "0"
    return f"{socket.gethostname()}-{made}"
