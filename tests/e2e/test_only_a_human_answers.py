"""Only a human answers (SPEC section 11): from inside a supervised agent's session,
``reply`` and ``unblock`` exit 77 and the inbox refuses; the agent never holds a secret."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from helpers import LOOPKIT, clean_env, loopkit, wait_until, write_config

REFUSAL = "an agent cannot answer its own question"

AGENT = f"""\
import json, os, subprocess, sys
lk = {str(LOOPKIT)!r}
rid = open("rid.txt").read().strip()
out = {{}}
for name, args, env in [
    ("reply", [lk, "reply", "--request-id", rid, "--reply", "A"], dict(os.environ)),
    ("unblock", [lk, "unblock", "--reply", "A"], dict(os.environ)),
    ("reply_env_cleared", [lk, "reply", "--request-id", rid, "--reply", "A"],
     {{k: v for k, v in os.environ.items() if k != "LOOPKIT_AGENT_SESSION"}}),
]:
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    out[name] = [done.returncode, done.stderr]
out["secrets"] = sorted(k for k in os.environ if k in (
    "LOOPKIT_HITL_TELEGRAM_TOKEN", "LOOPKIT_HITL_SLACK_WEBHOOK", "LOOPKIT_HITL_DIAL_CMD",
    "LOOPKIT_FLEET_DSN", "LOOPKIT_INBOX_TOKEN"))
out["session"] = bool(os.environ.get("LOOPKIT_AGENT_SESSION"))
json.dump(out, open("agent-tried.json", "w"))
"""


def test_an_agent_under_run_can_neither_answer_nor_see_the_secrets(ws: Path) -> None:
    (ws / "other").mkdir()
    write_config(ws / "other", '[escalation]\nchannel = "none"\n')
    asked = loopkit("-C", str(ws / "other"), "escalate", "-q", "Deploy?", "-c", "c", "-a", "a",
                    "--choice", "Yes — go")  # fmt: skip
    assert asked.returncode == 2
    rid = next((ws / "other" / "requests").glob("*.json")).stem
    (ws / "rid.txt").write_text(rid)
    (ws / "agent.py").write_text(AGENT)
    write_config(ws, f'[loop]\nagent = ["{sys.executable}", "agent.py"]\ndone = "true"\n')
    env = clean_env(
        LOOPKIT_HITL_TELEGRAM_TOKEN="123:AAsecretsecretsecretsecretsecret1",
        LOOPKIT_HITL_SLACK_WEBHOOK="https://hooks.slack.com/services/T/B/secret",
        LOOPKIT_FLEET_DSN="postgresql://u:pw@db/loopkit",
        LOOPKIT_INBOX_TOKEN="inbox-secret",
        LOOPKIT_HITL_CHANNEL="none",
    )
    done = loopkit("-C", str(ws), "run", env=env)
    assert done.returncode == 0, done.stderr
    tried = json.loads((ws / "agent-tried.json").read_text())
    assert tried["session"] is True and tried["secrets"] == []
    for name in ("reply", "unblock"):
        code, err = tried[name]
        assert code == 77 and REFUSAL in err, (name, code, err)
    if Path("/sys/fs/cgroup/unified/cgroup.procs").exists() or _cgroup2_writable():
        code, err = tried["reply_env_cleared"]
        assert code == 77, ("env -u LOOPKIT_AGENT_SESSION still inside the cgroup", code, err)
    assert json.loads((ws / "other" / "requests" / f"{rid}.json").read_text())["status"] == "open"
    # A human's own terminal answers as ever.
    assert (
        loopkit("-C", str(ws / "other"), "reply", "--request-id", rid, "--reply", "A").returncode
        == 0
    )


def _cgroup2_writable() -> bool:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        if " - cgroup2 " in line:
            return os.access(line.split()[4], os.W_OK)
    return False


def test_the_inbox_refuses_a_post_from_an_agent_process(ws: Path, tmp_path: Path) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    assert loopkit("-C", str(ws), "escalate", "-q", "Ship?", "-c", "c", "-a", "a",
                   "--choice", "Yes — go").returncode == 2  # fmt: skip
    rid = next((ws / "requests").glob("*.json")).stem
    out = tmp_path / "serve.out"
    with out.open("wb") as sink:
        serve = subprocess.Popen(
            [str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"],
            env=clean_env(),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        found = wait_until(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), 20, "serve up")
        assert isinstance(found, re.Match)
        base = found.group(0)
        token = (Path(os.environ["LOOPKIT_HOME"]) / "inbox.token").read_text().strip()
        client = CLIENT.format(base=base, token=token, rid=rid, what="answer", extra="")
        agent_env = clean_env(LOOPKIT_AGENT_SESSION="f00d")
        for script in (client, CLIENT.format(base=base, token=token, rid=rid, what="dismiss",
                                             extra=', "confirm": "1"')):  # fmt: skip
            as_agent = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                      text=True, env=agent_env, timeout=30)  # fmt: skip
            status, body = json.loads(as_agent.stdout)
            assert status == 403 and REFUSAL in body
            assert json.loads((ws / "requests" / f"{rid}.json").read_text())["status"] == "open"
        as_human = subprocess.run([sys.executable, "-c", client], capture_output=True, text=True,
                                  env=clean_env(), timeout=30)  # fmt: skip
        assert json.loads(as_human.stdout)[0] == 200
        assert json.loads((ws / "requests" / f"{rid}.json").read_text())["status"] == "resolved"
    finally:
        os.killpg(serve.pid, signal.SIGKILL)
        serve.wait(10)


CLIENT = """
import http.cookiejar, json, re, urllib.request, urllib.parse
jar = http.cookiejar.CookieJar()
web = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
page = web.open("{base}/?token={token}").read().decode()
csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
action = re.search(r'action="(/r/[^"]+/)answer"', page).group(1) + "{what}"
data = urllib.parse.urlencode({{"csrf": csrf, "reply": "A"{extra}}}).encode()
try:
    answer = web.open("{base}" + action, data)
    print(json.dumps([answer.status, answer.read().decode()]))
except urllib.error.HTTPError as exc:
    print(json.dumps([exc.code, exc.read().decode()]))
"""
