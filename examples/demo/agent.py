"""The demo's "agent": it rewrites price.py the same way every time and claims it fixed it.

A real loop runs Claude Code, Codex or any agent command here. This one never fixes
anything — writing the same lines again is no new ground (SPEC §25) — so verify keeps
failing and loopkit escalates on the third failure.
"""

import os
from pathlib import Path

iteration = os.environ.get("LOOPKIT_ITERATION", "?")
decision = os.environ.get("LOOPKIT_DECISION")
Path("price.py").write_text("def round_price(amount):\n    return round(amount, 2)\n")
print(f"agent: iteration {iteration}: tried to fix the rounding bug in price.py")
if decision:
    print(f"agent: iteration {iteration}: the human said: {decision}")
