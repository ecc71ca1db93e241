"""The agent is known without its environment and without a cgroup (SPEC §28): a ``loopkit
run`` whose cgroups cannot be made (``/sys/fs/cgroup`` read-only, as for a non-root user)
runs an agent that asks, then tries to answer its own question every way it can shed its
session — ``env -u``, ``env -i``, ``setsid`` with a double fork, the Python API — and every
try is refused (77): the supervisor is a child subreaper, so the agent's processes stay its
descendants whatever they do."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import LOOPKIT, clean_env, wait_until, write_config

TRIES = {
    "env -u": 'env -u LOOPKIT_AGENT_SESSION "$LK" reply --request-id "$ID" --reply A',
    "env -i": 'env -i PATH="$PATH" LOOPKIT_HOME="$LOOPKIT_HOME" "$LK" reply '
    '--request-id "$ID" --reply A',
    "setsid, double fork": 'setsid sh -c \'(env -i PATH="$PATH" '
    'LOOPKIT_HOME="$LOOPKIT_HOME" "$LK" reply --request-id "$ID" --reply A; '
    'echo $? > "$OUT.setsid") &\' ; '
    'for i in $(seq 600); do [ -s "$OUT.setsid" ] && break; sleep 0.05; done; '
    'exit $(cat "$OUT.setsid")',
    "the Python API": 'env -i PATH="$PATH" LOOPKIT_HOME="$LOOPKIT_HOME" "$PY" -c '
    '"import sys; from pathlib import Path; from loopkit import config; '
    "from loopkit.answering import answer; from loopkit.requests.store import RequestStore; "
    "from loopkit.workspace import Workspace; from loopkit.errors import AgentAnswer; "
    "store = RequestStore(Workspace.of(config.load(Path(sys.argv[1])))); "
    "exec('try:\\n answer(store, sys.argv[2], \\'A\\', by=\\'me\\')\\nexcept AgentAnswer:\\n "
    'sys.exit(77)\')" "$WS" "$ID"',
}


def _agent(out: Path) -> str:
    lines = [
        "set -u",
        f'LK="{LOOPKIT}"; PY="{sys.executable}"; WS="$PWD"; OUT="{out}"',
        '"$LK" escalate -q "Which flow?" -c "checkout" -a "read PROMPT.md" '
        '--choice "A — old" --choice "B — new" --json > "$OUT.asked"',
        'ID=$("$PY" -c "import json,sys; '
        "print(json.load(open(sys.argv[1]))['request']['request_id'])\" \"$OUT.asked\")",
        "export LK PY WS OUT ID",  # for the shells the tries start
    ]
    for number, command in enumerate(TRIES.values()):
        lines.append(f'( {command} ) > /dev/null 2>&1; echo "{number} $?" >> "$OUT"')
    lines.append('echo done >> "$OUT"')
    return "\n".join(lines) + "\n"


def _without_cgroups() -> list[str]:
    """A prefix that runs a command with the cgroup2 mount read-only (a private mount
    namespace: as for a user who may make no cgroup)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        if os.environ.get("CI"):
            raise AssertionError("CI runs as root with unshare (util-linux)")
        pytest.skip("LOUD SKIP: needs root and unshare to make the cgroup mount read-only")
    mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    points = [fields[4] for fields in mounts if "cgroup2" in fields[fields.index("-") + 1 :]]
    remount = " && ".join(f"mount -o remount,ro,bind {p} {p}" for p in points) or "true"
    return ["unshare", "-m", "sh", "-c", f'{remount} && exec "$@"', "sh"]


def test_an_agent_without_its_session_or_a_cgroup_cannot_answer_itself(
    ws: Path, tmp_path: Path
) -> None:
    out = tmp_path / "tries.txt"
    (ws / "agent.sh").write_text(f'cat /proc/self/cgroup > "{out}.cgroup"\n' + _agent(out))
    write_config(ws, '[loop]\nagent = ["/bin/sh", "agent.sh"]\npause = "0s"\n')
    with (tmp_path / "run.err").open("wb") as stderr:
        run = subprocess.Popen(
            [*_without_cgroups(), str(LOOPKIT), "-C", str(ws), "run"],
            env=clean_env(), stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until(lambda: out.exists() and "done" in out.read_text(), timeout=60,
                   what="the agent's tries")  # fmt: skip
        # No cgroup told them apart: none could be made.
        assert "loopkit-" not in Path(f"{out}.cgroup").read_text()
        tried = dict(line.split() for line in out.read_text().splitlines() if line != "done")
        assert tried == {str(n): "77" for n in range(len(TRIES))}, (list(TRIES), tried)
        asked = json.loads(Path(f"{out}.asked").read_text())["request"]
        record = json.loads((ws / "requests" / f"{asked['request_id']}.json").read_text())
        assert record["status"] == "open" and record["resolution"] is None
    finally:
        run.terminate()
        run.wait(timeout=30)
