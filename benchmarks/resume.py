"""The resume round trip (SPEC section 18): a human's answer → the agent's session at work again.

    python benchmarks/resume.py [--rounds 10]

A ``loopkit run`` daemon (channel ``none``) runs the fake ``claude -p`` of the tests
(``tests/hooks/fakeclaude.py``, which fires loopkit's installed hooks as Claude Code does).
Each round the session makes a gated call (``rm -rf junk<k>``): the hook denies it, the turn
ends, the loop blocks. The script then answers with ``loopkit reply … approve`` and times
from just before that command starts until the resumed session's first PreToolUse hook
fires (a timing hook beside loopkit's writes the time). The baseline, measured in the same
run, is the same loop without ``[loop] resume``: the answer reaches a fresh ``agent`` run.
p50 and p95 use nearest rank. Prints one markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import wait_for

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "hooks" / "fakeclaude.py"
LOOPKIT = Path(sys.executable).parent / "loopkit"


def gated(k: int) -> dict[str, object]:
    return {"tool": "Bash", "input": {"command": f"rm -rf junk{k}"}}


def setup(ws: Path, rounds: int, resume: bool) -> dict[str, str]:
    ws.mkdir(parents=True)
    home = ws.parent / f"{ws.name}-claude"
    # Resumed: one session whose episode k retries call k-1 (allowed) then makes call k.
    # Fresh: session k's only episode does the same.
    episodes = [[[gated(0)]]] + [[[gated(k - 1)], [gated(k)]] for k in range(1, rounds + 1)]
    script = {"sessions": [episodes] if resume else [[e] for e in episodes]}
    (ws.parent / f"{ws.name}-script.json").write_text(json.dumps(script))
    head = [sys.executable, str(FAKE), "-p"]
    tail = ["--output-format", "json", "--permission-mode", "bypassPermissions"]
    lines = [f"agent = {json.dumps([*head, 'go', *tail])}"]
    if resume:
        lines.append(f"resume = {json.dumps([*head, '--resume', '{session_id}', *tail])}")
    (ws / "loopkit.toml").write_text(
        "[loop]\n" + "\n".join(lines) + '\npause = "0s"\n[escalation]\nchannel = "none"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(
        FAKE_CLAUDE_HOME=str(home),
        FAKE_CLAUDE_SCRIPT=str(ws.parent / f"{ws.name}-script.json"),
        LOOPKIT_HOME=str(ws.parent / "loopkit-home"),
    )
    subprocess.run(
        [str(LOOPKIT), "-C", str(ws), "hook", "install", "claude"],
        env=env,
        check=True,
        capture_output=True,
    )
    settings = ws / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    stamp = f"cat >/dev/null; date +%s.%N >> {ws / 'fired.txt'}"
    data["hooks"]["PreToolUse"].insert(
        0, {"matcher": "Bash", "hooks": [{"type": "command", "command": stamp}]}
    )
    settings.write_text(json.dumps(data))
    return env


def open_request(ws: Path) -> str | None:
    for path in (ws / "requests").glob("*.json"):
        record = json.loads(path.read_text())
        if record.get("status") == "open":
            return str(record["request_id"])
    return None


def fired(ws: Path) -> list[float]:
    path = ws / "fired.txt"
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def measure(base: Path, rounds: int, resume: bool) -> list[float]:
    ws = base / ("resumed" if resume else "fresh")
    env = setup(ws, rounds, resume)
    daemon = subprocess.Popen(
        [str(LOOPKIT), "-C", str(ws), "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    samples = []
    try:
        for _ in range(rounds):
            request = wait_for(
                lambda: (ws / "BLOCKED.md").exists() and open_request(ws), "the gated call's block"
            )
            before = len(fired(ws))
            start = time.time()
            subprocess.run(
                [
                    str(LOOPKIT),
                    "-C",
                    str(ws),
                    "reply",
                    "--request-id",
                    request,
                    "--reply",
                    "approve",
                    "--by",
                    "bench",
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            wait_for(lambda: len(fired(ws)) > before, "the resumed session's hook")  # noqa: B023
            samples.append(fired(ws)[before] - start)
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(15)
    return samples


def rank(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, int(q * len(ordered) + 0.5) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="loopkit-resume-"))
    try:
        resumed = measure(base, args.rounds, resume=True)
        fresh = measure(base, args.rounds, resume=False)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"rounds: {args.rounds} · {os.cpu_count()} CPUs · Python {sys.version.split()[0]}\n")
    print("| answer → the agent's first hook call | p50 | p95 |")
    print("|---|---|---|")
    for name, samples in (
        ("`resume`: the same session", resumed),
        ("baseline: a fresh `agent` run", fresh),
    ):
        print(
            f"| {name} | {rank(samples, 0.5) * 1000:.0f} ms | {rank(samples, 0.95) * 1000:.0f} ms |"
        )


if __name__ == "__main__":
    main()
