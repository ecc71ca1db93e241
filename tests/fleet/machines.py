"""A "machine" of the fleet tests: a LOOPKIT_HOME of its own with a workspace, sharing one
database (and, for the phone, one bot) with the others."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any

from helpers import LOOPKIT, clean_env


class Machine:
    def __init__(self, root: Path, name: str, dsn: str, **extra: str) -> None:
        self.root = root
        self.label = name
        self.home = root / f"home-{name}"
        self.ws = root / f"ws-{name}"
        self.ws.mkdir(parents=True)
        settings = {"LOOPKIT_HITL_CHANNEL": "none", **extra}
        self.env = clean_env(LOOPKIT_HOME=str(self.home), LOOPKIT_FLEET_DSN=dsn, **settings)

    def lk(
        self, *args: str, ws: bool | Path = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """``loopkit`` as this machine runs it: in its workspace (``ws``: another one, or
        False for none)."""
        folder = self.ws if ws is True else ws
        where = ["-C", str(folder)] if folder else []
        return subprocess.run(
            [str(LOOPKIT), *where, *args], env=self.env, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip

    def workspace(self, repo: str) -> Path:
        """Another workspace of this machine, named ``repo`` (two machines may share one)."""
        path = self.root / f"{self.label}-repos" / repo
        path.mkdir(parents=True)
        return path

    @property
    def name(self) -> str:
        """This machine's name in the fleet (made on its first loopkit command)."""
        return f"{socket.gethostname()}-{(self.home / 'machine.id').read_text().strip()}"

    def escalate(self, question: str = "Which flow?") -> str:
        done = self.lk(
            "escalate",
            "-q",
            question,
            "-c",
            "checkout",
            "-a",
            "read",
            "--choice",
            "Keep — as is",
            "--choice",
            "Migrate — to v2",
        )
        assert done.returncode == 2, done.stderr
        return str(json.loads(self.lk("requests", "--json").stdout)[-1]["request_id"])

    def record(self, request_id: str) -> dict[str, Any]:
        data = json.loads((self.ws / "requests" / f"{request_id}.json").read_text())
        assert isinstance(data, dict)
        return data
