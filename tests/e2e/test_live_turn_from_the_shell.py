"""The live turn (SPEC §24) with the installed ``loopkit`` and small agents that speak
Claude Code's stream-json (the real CLIs: ``tests/agents/test_live_turn.py``): ``tail``
following a turn into the next iteration, ``say`` reaching the turn or — for an agent whose
output is text — the next run, and a runaway agent deaf to its interrupt and to SIGINT
stopped by its group, every process of it gone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import LOOPKIT, Daemon, alive, clean_env, loopkit, setup, wait_until, write_config

# A stream-json agent: its prompt in, a call that waits for the file `go`, a result; every
# line it reads afterwards is kept in heard.jsonl.
TALKER = r"""
import json, os, sys, threading, time
def out(o): sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
sys.stdin.readline()
out({"type": "system", "subtype": "init", "session_id": "s-%s" % os.environ["LOOPKIT_ITERATION"]})
def hear():
    for line in sys.stdin:
        with open("heard.jsonl", "a") as f:
            f.write(line)
threading.Thread(target=hear, daemon=True).start()
out({"type": "assistant", "message": {"id": "m1", "content": [
    {"type": "text", "text": "Waiting for go (token sk-ant-api03-SECRET)."},
    {"type": "tool_use", "id": "t1", "name": "Bash",
     "input": {"command": "until test -f go; do sleep 0.1; done"}}]}})
while not os.path.exists("go"):
    time.sleep(0.02)
out({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1",
     "content": "ok", "is_error": False}]}})
out({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
     "session_id": "s-1", "total_cost_usd": 0.01})
sys.stdin.read() if False else time.sleep(0.1)
"""

# An agent that makes the same call for ever, deaf to the interrupt and to SIGINT.
DEAF = r"""
import json, os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
def out(o): sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
sys.stdin.readline()
out({"type": "system", "subtype": "init", "session_id": "deaf-1"})
os.set_blocking(0, False)
n = 0
while True:
    n += 1
    with open("calls.txt", "a") as f:
        f.write(f"{n} {os.getpid()}\n")
    out({"type": "assistant", "message": {"id": f"m{n}", "content": [{"type": "tool_use",
         "id": f"t{n}", "name": "Bash", "input": {"command": "make test"}}]}})
    out({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": f"t{n}",
         "content": "make: *** [test] Error 1", "is_error": True}]}})
    time.sleep(0.3)
"""


def stream_agent(ws: Path, script: str, extra: str = "") -> None:
    (ws / "agent.py").write_text(script)
    agent = json.dumps([sys.executable, "agent.py", "--input-format", "stream-json"])
    write_config(
        ws, f'[loop]\nagent = {agent}\nprompt = "go on"\npause = "0s"\nkill_grace = "2s"\n' + extra
    )


def workspace(tmp_path: Path, name: str) -> Path:
    """A git repository of its own: the loop is named after it."""
    ws = tmp_path / name
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def row(ws: Path) -> dict[str, object]:
    done = loopkit("ps", "--json", env=clean_env())
    found = [r for r in json.loads(done.stdout) if r["workspace"] == str(ws)]
    return found[0] if found else {}


def test_tail_follows_the_turn_and_say_reaches_it(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "shop")
    stream_agent(ws, TALKER)
    env = clean_env(LOOPKIT_HITL_TELEGRAM_TOKEN="sk-ant-api03-SECRET")
    with Daemon(ws, "--max-iterations", "2", env=env) as daemon:
        running = wait_until(
            lambda: (row(ws).get("live") or {}).get("tool"), timeout=30, what="ps showing the call"
        )
        assert running["input"]["command"] == "until test -f go; do sleep 0.1; done"  # type: ignore[index]
        follow = subprocess.Popen(
            [str(LOOPKIT), "-C", str(ws), "tail", "-n", "3"],
            env=clean_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert follow.stdout is not None
            told = loopkit("-C", str(ws), "say", "use the staging database", env=clean_env())
            assert "delivered into the running turn (claude, session s-1, iteration 1)" in (
                told.stdout
            )
            wait_until(
                lambda: (
                    "use the staging database" in (ws / "heard.jsonl").read_text()
                    if (ws / "heard.jsonl").exists()
                    else False
                ),
                what="the agent heard it",
            )
            (ws / "go").touch()
            seen: list[str] = []
            while not any("iteration 2" in line for line in seen):
                line = follow.stdout.readline()
                assert line, seen
                seen.append(line.rstrip("\n"))
            while not any("→ Bash: until test -f go" in line for line in seen[-3:]):
                seen.append(follow.stdout.readline().rstrip("\n"))
        finally:
            follow.terminate()
            follow.wait(10)
            if follow.stdout is not None:
                follow.stdout.close()
        shown = "\n".join(seen)
        assert seen[0].startswith("==> shop: running, iteration 1 · ▶ Bash: until test -f go")
        assert "claude: ← " in shown and "via cli: use the staging database" in shown
        assert "claude: result: success after 1 turn(s)" in shown
        assert "SECRET" not in shown  # redacted, as the log is
        assert daemon.wait(60) == 0


def test_say_to_an_agent_whose_output_is_text_waits_for_its_next_run(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "plain")
    setup(
        ws,
        agent='echo "$LOOPKIT_GUIDANCE" >> heard.txt\nwhile [ ! -f go ]; do sleep 0.05; '
        "done\nrm go\n",
        verify="exit 0\n",
    )
    with Daemon(ws, "--max-iterations", "2") as daemon:
        daemon.wait_state(status="running", iteration=1)
        wait_until((ws / "heard.txt").exists, what="the agent's first run")
        # From anywhere, the loop named first (its repo's name), the rest the message.
        told = loopkit("say", "plain", "check", "the", "README", cwd=tmp_path, env=clean_env())
        assert told.stdout.strip() == (
            "plain: noted for its next agent run (the agent (its "
            "output is no event stream) takes no message mid-turn)"
        )
        (ws / "go").touch()
        wait_until(
            lambda: "check the README" in (ws / "heard.txt").read_text(),
            what="the next run given the note",
        )
        (ws / "go").touch()
        assert daemon.wait(30) == 0


def test_an_agent_deaf_to_its_interrupt_and_to_sigint_is_stopped_by_its_group(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path, "deaf")
    stream_agent(ws, DEAF, "\n[stuck]\nsame_call = 3\n")
    done = loopkit("-C", str(ws), "run", "--exit-on-block", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    calls = (ws / "calls.txt").read_text().splitlines()
    # 3 to fire; one may be on its way as the interrupt goes out, a second moves to SIGINT,
    # one more after SIGINT stops the group.
    assert 3 <= len(calls) <= 6, calls
    pid = int(calls[-1].split()[1])
    assert not alive(pid)
    (request,) = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    assert request["trigger"] == "stuck-same-call"
    blocked = (ws / "BLOCKED.md").read_text()
    assert "> Bash: make test" in blocked
    assert "Stopped with stopping its process group (SIGTERM, then SIGKILL)" in blocked
    events = [
        json.loads(line) for line in (ws / ".loopkit" / "events.jsonl").read_text().splitlines()
    ]
    said = [e["event"] for e in events if e["event"].startswith("runaway")]
    assert said == ["runaway", "runaway_sigint", "runaway_group"]
