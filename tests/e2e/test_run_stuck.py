"""``loopkit run`` in a git repository, with the installed loopkit and shell agents: a loop
that commits a new module every iteration never trips the stuck detector; one that only
touches a file (its mtime, not its content) is asked about at ``no_progress`` with the
unchanged commit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import lk, records, setup

GIT_ID = "-c user.name=Agent -c user.email=agent@example.com"


def git_repo(ws: Path) -> str:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("runs.txt\n")
    (ws / "README.md").write_text("# shop\n")
    subprocess.run(f"git {GIT_ID} add -A && git {GIT_ID} commit -qm init", shell=True,
                   cwd=ws, check=True)  # fmt: skip
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True)
    return head.stdout.strip()


def test_a_loop_committing_every_iteration_is_never_stuck(ws: Path) -> None:
    git_repo(ws)
    agent = (  # a new module each commit: new ground (a counter rewritten would not be)
        'echo "def step(): return $LOOPKIT_ITERATION" > "step$LOOPKIT_ITERATION.py"\n'
        f'git {GIT_ID} add -A && git {GIT_ID} commit -qm "step $LOOPKIT_ITERATION"\n'
        'echo "Committed step $LOOPKIT_ITERATION."\n'
    )
    setup(ws, agent=agent, verify="echo '3 passed in 0.01s'\n")
    done = lk(ws, "run", "--max-iterations", "6", "--exit-on-block")
    assert done.returncode == 0, done.stderr
    assert records(ws) == []


def test_touching_a_file_is_no_progress_and_asks_with_the_commit(ws: Path) -> None:
    head = git_repo(ws)
    agent = "touch README.md .heartbeat\necho 'Checked the plan: all good, nothing to change.'\n"
    (ws / ".heartbeat").write_text("")
    subprocess.run(f"git {GIT_ID} add -A && git {GIT_ID} commit -qm beat", shell=True, cwd=ws,
                   check=True)  # fmt: skip
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True)
    setup(ws, agent=agent, verify="echo '3 passed in 0.01s'\n")
    blocked = lk(ws, "run", "--exit-on-block")
    assert blocked.returncode == 2, blocked.stderr
    [record] = records(ws)
    assert (record["trigger"], record["iteration"]) == ("stuck-no-progress", 3)
    assert f"HEAD {head.stdout.strip()[:12]} unchanged" in str(record["situation"])
    status = json.loads(lk(ws, "status", "--json").stdout)
    assert status["stuck"]["thresholds"]["no_progress"] == 3
    assert status["stuck"]["counters"]["no_progress"] == 3
