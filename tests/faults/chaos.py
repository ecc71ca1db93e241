"""The fault-injection run: ``kill -9`` of loopkit at random points, then a restart, then
a count of what broke. Shared by the suite (a short run) and ``benchmarks/faults.py``
(a long one, which can be pointed at an older loopkit to compare).

Each round, in a fresh workspace whose channel is a fake Bot API on 127.0.0.1:

* ``escalate`` — killed after a random delay within its own run time, then the next start
  (``loopkit status``, then ``loopkit run --exit-on-block``) must leave every saved question
  either standing as the block (and sent) or joined to it;
* ``run`` — a supervisor killed while it raises its own block (verify fails at once); the
  restart must not ask a second question.

Counted: *lost* (a saved question that is neither the block nor joined to it, or a block
never sent), *doubled* (a message sent more often than the record's delivery entries
account for, or two questions for one block), *torn* (a record that is not valid JSON).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from fakeserver import FakeServer

TOKEN = "424242:AAChaosTokenNotARealOne_abcdefgh"
ESCALATE = ["escalate", "-q", "Which flow?", "-c", "checkout", "-a", "read the spec",
            "--choice", "A — keep", "--choice", "B — migrate"]  # fmt: skip


@dataclass
class Tally:
    kills: int = 0
    lost: int = 0
    doubled: int = 0
    torn: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.kills += other.kills
        self.lost += other.lost
        self.doubled += other.doubled
        self.torn += other.torn
        self.notes += other.notes


def environment(server: FakeServer, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPKIT_")}
    env.update(
        LOOPKIT_HOME=str(home),
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT="7",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    return env


def _run(
    loopkit: str, ws: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([loopkit, "-C", str(ws), *args], env=env, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


def _kill_after(proc: subprocess.Popen[bytes], delay: float) -> None:
    try:
        proc.wait(delay)  # finished before its time came: nothing to kill
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _records(ws: Path, tally: Tally) -> list[dict[str, object]]:
    found = []
    for path in sorted((ws / "requests").glob("*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except ValueError:
            tally.torn += 1
            tally.notes.append(f"{path}: not valid JSON")
    return found


def _sends_for(server: FakeServer, request_id: str) -> int:
    return sum(1 for call in server.calls("/sendMessage") if request_id in json.dumps(call.body))


def _check(ws: Path, server: FakeServer, tally: Tally, *, questions: int) -> None:
    """After the restart: every saved question stands, joined, or was never saved."""
    records = _records(ws, tally)
    blocked = ws / "BLOCKED.md"
    text = blocked.read_text() if blocked.is_file() else ""
    standing = [r for r in records if f"loopkit request: {r['request_id']}" in text]
    for record in records:
        rid = str(record["request_id"])
        if record.get("block") == "pending":
            tally.lost += 1
            tally.notes.append(f"{rid}: still pending after the restart")
        elif record in standing:
            if _sends_for(server, rid) == 0:
                tally.lost += 1
                tally.notes.append(f"{rid}: the block was never sent")
        elif record.get("status") == "open" and record.get("joined_to") is None:
            tally.lost += 1
            tally.notes.append(f"{rid}: saved, but neither the block nor joined to it")
        delivery = record.get("delivery") or []
        assert isinstance(delivery, list)
        if _sends_for(server, rid) > len(delivery):
            tally.doubled += 1
            tally.notes.append(
                f"{rid}: sent {_sends_for(server, rid)}× for {len(delivery)} entries"
            )
        firsts = [
            e for e in delivery if isinstance(e, dict) and e.get("ok") and not e.get("repeat")
        ]
        if len(firsts) > 1:
            tally.doubled += 1
            tally.notes.append(f"{rid}: delivered {len(firsts)} times, not as a repeat")
    asked = [r for r in records if r.get("status") == "open" and r.get("joined_to") is None]
    if len(asked) > questions:
        tally.doubled += 1
        tally.notes.append(f"{ws}: {len(asked)} questions asked for {questions} block(s)")


def kill_escalate(loopkit: str, root: Path, server: FakeServer, delay: float) -> Tally:
    tally = Tally(kills=1)
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    env = environment(server, home)
    proc = subprocess.Popen([loopkit, "-C", str(ws), *ESCALATE], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    _kill_after(proc, delay)
    _run(loopkit, ws, env, "status")
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\n')
    _run(loopkit, ws, env, "run", "--exit-on-block", "--max-iterations", "0")
    _check(ws, server, tally, questions=1)
    return tally


SUPERVISED = """[loop]
agent = "true"
verify = "false"
max_verify_failures = 1
pause = "0s"
"""


def kill_run(loopkit: str, root: Path, server: FakeServer, delay: float) -> Tally:
    tally = Tally(kills=1)
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    (ws / "loopkit.toml").write_text(SUPERVISED)
    env = environment(server, home)
    proc = subprocess.Popen([loopkit, "-C", str(ws), "run", "--exit-on-block"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    _kill_after(proc, delay)
    _run(loopkit, ws, env, "run", "--exit-on-block")
    _check(ws, server, tally, questions=1)
    return tally


def duration(loopkit: str, args: list[str], ws_toml: str | None, server: FakeServer) -> float:
    """How long one undisturbed run of ``args`` takes here (the range kills are drawn from)."""
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        if ws_toml:
            (ws / "loopkit.toml").write_text(ws_toml)
        started = time.monotonic()
        _run(loopkit, ws, environment(server, Path(tmp) / "home"), *args)
        return time.monotonic() - started


def fault_run(loopkit: str, rounds: int, seed: int = 11) -> dict[str, Tally]:
    """``rounds`` kills of each kind; the tallies by kind."""
    rng = random.Random(seed)
    results = {"escalate": Tally(), "run": Tally()}
    server = FakeServer().start()
    try:
        spans = {
            "escalate": duration(loopkit, ESCALATE, None, server),
            "run": duration(loopkit, ["run", "--exit-on-block"], SUPERVISED, server),
        }
        for _ in range(rounds):
            for kind, scenario in (("escalate", kill_escalate), ("run", kill_run)):
                with tempfile.TemporaryDirectory() as tmp:
                    delay = rng.uniform(0.5, 1.0) * spans[kind]  # past start-up, mostly
                    results[kind].add(scenario(loopkit, Path(tmp), server, delay))
    finally:
        server.close()
    return results


if __name__ == "__main__":  # python tests/faults/chaos.py [loopkit] [rounds]
    exe = sys.argv[1] if len(sys.argv) > 1 else str(Path(sys.executable).parent / "loopkit")
    for kind, tally in fault_run(exe, int(sys.argv[2]) if len(sys.argv) > 2 else 5).items():
        print(kind, tally.kills, tally.lost, tally.doubled, tally.torn, tally.notes[:5])
