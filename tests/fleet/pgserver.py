"""A real PostgreSQL server for the fleet tests: ``initdb`` in a temporary folder, a free
port on 127.0.0.1, stopped (and removable) at the end. Run as the ``postgres`` user when the
tests run as root (the server refuses root). ``stop``/``start`` let a test take it away
and bring it back, with its data."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path


def binaries() -> Path | None:
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(found, "initdb").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    def __init__(self) -> None:
        bin_dir = binaries()
        assert bin_dir is not None
        self.bin = bin_dir
        # Its own folder under /tmp: pytest's are closed to the postgres user.
        root = Path(tempfile.mkdtemp(prefix="loopkit-pg-"))
        self.root = root
        self.data = root / "data"
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            self.as_user = ["runuser", "-u", "postgres", "--"]
            root.mkdir(parents=True, exist_ok=True)
            shutil.chown(root, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "loopkit", "--no-sync")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bin / tool), *args], check=True,
                       capture_output=True, timeout=120)  # fmt: skip

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                  "-w", "start")  # fmt: skip

    def stop(self, *, remove: bool = False) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://loopkit@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = "t" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.dsn(name)
