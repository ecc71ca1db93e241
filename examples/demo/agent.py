"""The demo's "agent": it appends a line to work.log and claims it fixed the bug.

A real loop runs Claude Code, Codex or any agent command here. This one never fixes
anything, so verify keeps failing and loopkit escalates on the third failure.
"""

import os
from pathlib import Path

iteration = os.environ.get("LOOPKIT_ITERATION", "?")
decision = os.environ.get("LOOPKIT_DECISION")
with Path("work.log").open("a") as log:
    log.write(f"iteration {iteration}: tried to fix the rounding bug\n")
    if decision:
        log.write(f"iteration {iteration}: the human said: {decision}\n")
print(f"agent: iteration {iteration}: edited price.py (rounding)")
