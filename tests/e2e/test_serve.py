"""`loopkit serve`: the per-user daemon answers blocks nobody waits on, retries their
deliveries, stops on SIGTERM with 143, and prints a systemd user unit."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fakeserver import FakeServer, Reply
from helpers import LOOPKIT, PHONE_CHAT, clean_env, loopkit, phone_env, wait_until, write_config

ANA = {"id": 111, "first_name": "Ana"}
ESCALATE = ("escalate", "-q", "Ship it?", "-c", "c", "-a", "a", "--choice", "Yes — go",
            "--choice", "No — wait")  # fmt: skip


@contextmanager
def serving(env: dict[str, str], tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    out = tmp_path / "serve.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"], env=env,
                                stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                                start_new_session=True)  # fmt: skip
    try:
        found = wait_until(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), 20, "serve up")
        assert isinstance(found, re.Match)
        yield proc, found.group(0)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_print_unit_is_a_systemd_user_unit() -> None:
    done = loopkit("serve", "--print-unit")
    assert done.returncode == 0
    assert (
        "Restart=on-failure" in done.stdout
        and "-m loopkit serve --listen 127.0.0.1:8765" in done.stdout
    )
    assert "[Install]\nWantedBy=default.target" in done.stdout


def test_a_bad_listen_address_is_a_usage_error() -> None:
    done = loopkit("serve", "--listen", "nowhere")
    assert done.returncode == 64 and "HOST:PORT" in done.stderr


def test_a_bare_escalate_is_answered_through_serve(
    ws: Path, server: FakeServer, tmp_path: Path
) -> None:
    env = phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    (ws / "agent.py").write_text(
        "import os\nopen('seen.txt', 'a').write(os.environ.get('LOOPKIT_DECISION', '-') + '\\n')\n"
    )
    write_config(ws, f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n')
    assert loopkit("-C", str(ws), *ESCALATE, env=env).returncode == 2
    [record] = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json")]
    message_id = record["delivery"][0]["message_id"]
    with serving(env, tmp_path) as (proc, url):
        health = urllib.request.urlopen(f"{url}/healthz", timeout=5).read()
        assert health == b"ok\n"
        server.push_update(
            callback_query={
                "id": "cb-1", "from": ANA, "data": f"{record['request_id']}:1",
                "message": {"message_id": message_id, "chat": {"id": PHONE_CHAT}, "text": "x"},
            }
        )  # fmt: skip
        wait_until(lambda: not (ws / "BLOCKED.md").exists(), 10, "the block lifted by serve")
        answered = json.loads(next((ws / "requests").glob("*.json")).read_text())
        assert answered["status"] == "resolved" and answered["resolution"]["via"] == "telegram"
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(10) == 143
    # serve has no workspace: the folder it started in does not become one.
    assert not (tmp_path / ".loopkit").exists()
    assert (Path(os.environ["LOOPKIT_HOME"]) / "serve-events.jsonl").is_file()
    assert loopkit("-C", str(ws), "run", "--max-iterations", "1", env=env).returncode == 0
    assert (ws / "seen.txt").read_text().splitlines() == ["no"]  # the tapped B reached the agent


def test_serve_retries_a_block_nobody_watches(ws: Path, server: FakeServer, tmp_path: Path) -> None:
    server.queue("/hook", Reply(500, "down"), Reply(500, "down"))
    env = clean_env(LOOPKIT_HITL_CHANNEL="slack", LOOPKIT_HITL_SLACK_WEBHOOK=f"{server.url}/hook")
    write_config(ws, '[escalation]\nretry_backoff = "100ms"\n')
    assert loopkit("-C", str(ws), *ESCALATE, env=env).returncode == 2
    with serving(env, tmp_path):
        wait_until(lambda: len(server.calls("/hook")) >= 3, 15, "the retry by serve")

        def delivered() -> bool:
            record = json.loads(next((ws / "requests").glob("*.json")).read_text())
            return record["delivery"][-1]["ok"] is True

        wait_until(delivered, 10, "the delivery recorded")
