"""``loopkit init``, ``doctor`` and ``send-test``: setting a workspace up and checking it."""

from __future__ import annotations

import json
from pathlib import Path

from fakeserver import FakeServer, Reply
from helpers import PHONE_TOKEN, clean_env, loopkit, phone_env, write_config

AGENT = '[loop]\nagent = "true"\n'


def test_init_never_overwrites_without_force(ws: Path) -> None:
    done = loopkit("-C", str(ws), "init", "--agent", "claude -p 'go'", "--verify", "pytest -q")
    assert done.returncode == 0
    toml = (ws / "loopkit.toml").read_text()
    assert "agent = \"claude -p 'go'\"" in toml
    assert (ws / "templates" / "BLOCKED.md.j2").is_file()
    (ws / "loopkit.toml").write_text(toml + "# mine\n")
    again = loopkit("-C", str(ws), "init")
    assert again.returncode == 0 and "kept" in again.stdout
    assert (ws / "loopkit.toml").read_text().endswith("# mine\n")
    forced = loopkit("-C", str(ws), "init", "--force")
    assert forced.returncode == 0
    assert not (ws / "loopkit.toml").read_text().endswith("# mine\n")
    # A plain init writes no agent: doctor says so as `run` does, and exits as it does.
    checked = loopkit("-C", str(ws), "doctor")
    assert checked.returncode == 78 and "no [loop] agent in" in checked.stdout


def test_doctor_names_each_problem_with_its_fix(ws: Path) -> None:
    write_config(ws, AGENT)
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text("{% if %}")
    env = clean_env(LOOPKIT_HITL_CHANNEL="telegram")
    done = loopkit("-C", str(ws), "doctor", env=env)
    assert done.returncode == 78  # `run` refuses a channel that reaches nobody, as doctor does
    out = done.stdout
    assert "LOOPKIT_HITL_TELEGRAM_TOKEN is not set: create a bot with @BotFather" in out
    assert "LOOPKIT_HITL_TELEGRAM_CHAT is not set" in out
    assert "BLOCKED.md.j2:1: template syntax error" in out
    assert "3 problem(s); `loopkit run` would refuse to start (exit 78)" in out


def test_read_commands_take_json(ws: Path) -> None:
    write_config(ws, AGENT)
    done = loopkit("-C", str(ws), "doctor", "--json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["problems"] == 0 and data["findings"]


def test_doctor_checks_the_bot_the_chat_and_the_webhook(ws: Path, server: FakeServer) -> None:
    write_config(ws, AGENT)
    server.queue("/getMe", Reply(200, {"ok": True, "result": {"username": "loopkit_bot"}}))
    server.queue("/getChat", Reply(200, {"ok": True, "result": {"type": "private"}}))
    server.queue("/getWebhookInfo", Reply(200, {"ok": True, "result": {"url": ""}}))
    good = loopkit("-C", str(ws), "doctor", env=phone_env(server, LOOPKIT_HITL_CHANNEL="telegram"))
    assert good.returncode == 0, good.stdout
    assert "the token works: bot @loopkit_bot" in good.stdout
    assert "no webhook" in good.stdout
    server.queue("/getWebhookInfo", Reply(200, {"ok": True, "result": {"url": "https://x/y"}}))
    hooked = loopkit(
        "-C", str(ws), "doctor", env=phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    )
    assert hooked.returncode == 1
    assert "a webhook is set on this bot" in hooked.stdout and "deleteWebhook" in hooked.stdout
    server.queue("/getMe", Reply(401, {"ok": False, "description": "Unauthorized"}))
    bad = loopkit("-C", str(ws), "doctor", env=phone_env(server, LOOPKIT_HITL_CHANNEL="telegram"))
    assert bad.returncode == 1 and "getMe: HTTP 401: Unauthorized" in bad.stdout
    server.queue(
        "/getChat", Reply(400, {"ok": False, "description": "Bad Request: chat not found"})
    )
    nochat = loopkit(
        "-C", str(ws), "doctor", env=phone_env(server, LOOPKIT_HITL_CHANNEL="telegram")
    )
    assert nochat.returncode == 1 and "send the bot a message" in nochat.stdout
    for out in (good.stdout, hooked.stdout, bad.stdout, nochat.stdout):
        assert PHONE_TOKEN not in out


def test_send_test(ws: Path, server: FakeServer) -> None:
    assert loopkit("-C", str(ws), "send-test").returncode == 1  # channel none
    hook = server.url + "/services/T0/B0/hook"
    env = clean_env(LOOPKIT_HITL_CHANNEL="slack", LOOPKIT_HITL_SLACK_WEBHOOK=hook)
    done = loopkit("-C", str(ws), "send-test", env=env)
    assert done.returncode == 0, done.stderr
    [call] = server.calls("/hook")
    assert call.body["text"].startswith("[loopkit] blocked in ws on ")
    assert len(call.body["text"].splitlines()) == 5
    server.queue("/hook", Reply(400, body="invalid_payload"))
    failed = loopkit("-C", str(ws), "send-test", env=env)
    assert failed.returncode == 1
    assert "invalid_payload" in failed.stderr and hook not in failed.stderr


def test_doctor_without_a_config_says_what_run_says_and_exits_as_it_does(ws: Path) -> None:
    doctor = loopkit("-C", str(ws), "doctor")
    run = loopkit("-C", str(ws), "run")
    assert (doctor.returncode, run.returncode) == (78, 78)
    said = f"no {ws / 'loopkit.toml'}: this folder is not a loopkit workspace"
    assert said in doctor.stdout and said in run.stderr
    assert "no problems found" not in doctor.stdout
