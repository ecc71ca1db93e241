"""What the benchmark scripts share: waiting for a condition with a deadline, and counting
an agent's runs. Each script runs as ``python benchmarks/<name>.py``, so this folder is on
``sys.path``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEADLINE = 30.0  # seconds: a benchmark that waits longer has found a bug, not a figure


def wait_for(condition: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """``condition()``'s first truthy value, polled every millisecond; exits the script
    with a line naming ``what`` when ``deadline`` passes first."""
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            name = os.path.basename(sys.argv[0]) if sys.argv else "benchmark"
            raise SystemExit(f"{name}: gave up waiting for {what}")
        time.sleep(0.001)


def agent_runs(ws: Path) -> int:
    """How often the benchmark's agent ran: the lines of its ``<workspace>.runs.txt``, beside
    the workspace (a log in it would be the agent's work to the stuck detector)."""
    real = ws.resolve()
    path = real.with_name(f"{real.name}.runs.txt")
    return len(path.read_text().splitlines()) if path.exists() else 0
