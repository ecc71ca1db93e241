"""A human's decision reaches one agent run at most, across a kill -9 at any point."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from helpers import Daemon, alive, loopkit, wait_until, write_config

AGENT = "import os\nopen('seen.txt', 'a').write(os.environ.get('LOOPKIT_DECISION', '-') + '\\n')\n"
VERIFY = """\
import os, time
with open("verifying", "w") as handle:
    handle.write(str(os.getpid()))
if os.path.exists("hang"):
    time.sleep(60)
"""


def test_a_kill_during_verify_does_not_hand_the_decision_on_twice(ws: Path) -> None:
    (ws / "agent.py").write_text(AGENT)
    (ws / "verify.py").write_text(VERIFY)
    write_config(ws, f'[loop]\nagent = ["{sys.executable}", "agent.py"]\n'
                     f'verify = ["{sys.executable}", "verify.py"]\npause = "0s"\n')  # fmt: skip
    escalate = ("escalate", "-q", "Which?", "-c", "c", "-a", "a", "--choice", "Flow A — a")
    assert loopkit("-C", str(ws), *escalate).returncode == 2
    assert loopkit("-C", str(ws), "unblock", "--reply", "A").returncode == 0
    (ws / "hang").write_text("")
    with Daemon(ws, "--max-iterations", "1") as daemon:
        wait_until(lambda: (ws / "verifying").exists() and (ws / "verifying").read_text(), 20)
        os.kill(daemon.proc.pid, signal.SIGKILL)  # the supervisor alone: mid-verify
        daemon.proc.wait(10)
    (ws / "hang").unlink()
    orphan = int((ws / "verifying").read_text())
    if alive(orphan):  # left behind by the kill -9 (stopping orphans is another promise)
        os.kill(orphan, signal.SIGKILL)
    again = loopkit("-C", str(ws), "run", "--max-iterations", "1")
    assert again.returncode == 0, again.stderr
    assert (ws / "seen.txt").read_text().splitlines() == ["flow-a", "-"]
    assert not any(alive(int(p)) for p in [])
