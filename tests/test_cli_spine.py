"""End to end: the installed ``loopkit`` in a tmp_path workspace."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fakeserver import FakeServer, Reply
from helpers import clean_env, loopkit, read_only_prefix

TOKEN = "987654:AAFakeTokenForTestsOnly_abcdefghijk"
ESCALATE = [
    "escalate",
    "--question", "Which payment flow should checkout use?",
    "--context", "Feature: checkout\nFile: app/pay.py",
    "--attempted", "read PROMPT.md: it names both",
    "--attempted", "grep for a decision record: none",
    "--choice", "Flow A — keeps the old API",
    "--choice", "Flow B — needs a migration",
]  # fmt: skip


def test_escalate_end_to_end_then_check_until_removed(ws: Path) -> None:
    done = loopkit("-C", str(ws), *ESCALATE)
    assert done.returncode == 2, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[loopkit] blocked in ws on 20")
    assert lines[1:5] == [
        "Q: Which payment flow should checkout use?",
        "Context: Feature: checkout File: app/pay.py",
        "Attempted: read PROMPT.md: it names both; grep for a decision record: none",
        "Choices: A) Flow A | B) Flow B",
    ]
    [request] = list((ws / "requests").glob("*.json"))
    record = json.loads(request.read_text())
    assert record["status"] == "open" and record["delivery"] == []
    assert (ws / "BLOCKED.md").read_text().startswith("# Blocked\n")

    check = loopkit("check", cwd=ws)
    assert check.returncode == 2
    assert check.stdout.startswith("# Blocked\n<!-- loopkit request: ")
    assert len(check.stdout.splitlines()) <= 30
    as_json = json.loads(loopkit("-C", str(ws), "check", "--json").stdout)
    assert as_json["blocked"] is True and as_json["request_id"] == record["request_id"]

    (ws / "BLOCKED.md").unlink()
    assert loopkit("check", cwd=ws).returncode == 0
    assert loopkit("-C", str(ws), "check", "--json").stdout.strip() == json.dumps(
        {"blocked": False, "blocked_file": str(ws / "BLOCKED.md"), "request_id": None}
    )


def test_check_through_click_matches_fast_path(ws: Path) -> None:
    (ws / "BLOCKED.md").write_text("# Blocked\n")
    # "check -v" is not a fast-path form: it goes through click and must agree.
    assert loopkit("-v", "-C", str(ws), "check").returncode == 2
    assert loopkit("-C", str(ws), "check").returncode == 2


def test_check_honours_blocked_file_setting(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nblocked_file = "STOP.md"\n')
    (ws / "BLOCKED.md").write_text("not ours\n")
    assert loopkit("check", cwd=ws).returncode == 0
    (ws / "STOP.md").write_text("# Blocked\n")
    assert loopkit("check", cwd=ws).returncode == 2


def test_check_with_corrupt_config_that_sets_blocked_file(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nblocked_file = "STOP.md\n')
    done = loopkit("check", cwd=ws)
    assert done.returncode == 78
    assert done.stderr.count("\n") == 1 and "loopkit.toml:2" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["escalate", "--context", "c", "--attempted", "a", "--choice", "A"],  # no --question
        ["escalate", "--question", "q", "--bogus"],
        ["no-such-command"],
        ["-C", "/no/such/folder", "check", "-v"],
        [],
    ],
)
def test_usage_errors_exit_64_never_2(ws: Path, args: list[str]) -> None:
    done = loopkit(*args, cwd=ws)
    assert done.returncode == 64, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    if args:
        assert len(done.stderr.strip().splitlines()) == 1


def test_fast_path_bad_workspace_is_a_usage_error(ws: Path) -> None:
    done = loopkit("-C", str(ws / "missing"), "check")
    assert done.returncode == 64 and "is not a folder" in done.stderr


def test_four_choices_is_bad_input(ws: Path) -> None:
    args = [*ESCALATE, "--choice", "C", "--choice", "D"]
    done = loopkit("-C", str(ws), *args)
    assert done.returncode == 65
    assert "4 choices given" in done.stderr
    assert not (ws / "BLOCKED.md").exists() and not (ws / "requests").exists()


def test_blocked_file_that_is_a_folder(ws: Path) -> None:
    (ws / "BLOCKED.md").mkdir()
    done = loopkit("-C", str(ws), *ESCALATE)
    assert done.returncode == 65 and "not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
    assert loopkit("-C", str(ws), "check").returncode == 65


def test_read_only_workspace_is_a_clear_error(ws: Path) -> None:
    prefix = read_only_prefix(ws)
    done = loopkit("-C", str(ws), *ESCALATE, prefix=prefix)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "Read-only file system" in line or "Permission denied" in line
    assert "make the workspace writable" in line
    assert not (ws / "BLOCKED.md").exists()


def test_telegram_end_to_end_never_leaks_the_token(ws: Path, server: FakeServer) -> None:
    env = clean_env(
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT="4242",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    done = loopkit("-C", str(ws), *ESCALATE, env=env)
    assert done.returncode == 2, done.stderr
    [call] = server.calls("/sendMessage")
    assert call.path == f"/bot{TOKEN}/sendMessage"
    assert call.body["chat_id"] == "4242"
    assert call.body["text"].splitlines()[1] == "Q: Which payment flow should checkout use?"
    buttons = call.body["reply_markup"]["inline_keyboard"]
    record = json.loads(next((ws / "requests").glob("*.json")).read_text())
    assert [b[0]["callback_data"] for b in buttons] == [
        f"{record['request_id']}:0",
        f"{record['request_id']}:1",
    ]
    assert record["delivery"][0]["ok"] is True
    assert record["delivery"][0]["message_id"] == 101
    events = (ws / ".loopkit" / "events.jsonl").read_text()
    assert "HTTP Request: POST" in events  # httpx's own log line, redacted
    everything = done.stdout + done.stderr + events
    everything += "".join(p.read_text() for p in ws.rglob("*") if p.is_file())
    assert TOKEN not in everything
    assert "AAFakeTokenForTestsOnly" not in everything


def test_telegram_failure_is_a_warning_and_still_blocks(ws: Path, server: FakeServer) -> None:
    server.queue("/sendMessage", Reply(500), Reply(500))
    env = clean_env(
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN=TOKEN,
        LOOPKIT_HITL_TELEGRAM_CHAT="4242",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    done = loopkit("-C", str(ws), *ESCALATE, env=env)
    assert done.returncode == 2
    assert "warning: telegram delivery failed: HTTP 500" in done.stderr
    assert TOKEN not in done.stderr and "Traceback" not in done.stderr
    assert len(server.calls("/sendMessage")) == 2
    record = json.loads(next((ws / "requests").glob("*.json")).read_text())
    assert record["delivery"][0]["ok"] is False and record["delivery"][0]["status"] == 500


def test_a_hanging_server_is_bounded(ws: Path, server: FakeServer) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nsend_timeout = "1s"\n')
    server.queue("/hook", Reply(hang=True))
    hook = server.url + "/services/T0/B0/hook"
    env = clean_env(LOOPKIT_HITL_CHANNEL="slack", LOOPKIT_HITL_SLACK_WEBHOOK=hook)
    started = time.monotonic()
    done = loopkit("-C", str(ws), *ESCALATE, env=env)
    assert time.monotonic() - started < 8
    assert done.returncode == 2
    assert "no answer within 1 s" in done.stderr
    assert hook not in done.stderr + (ws / ".loopkit" / "events.jsonl").read_text()


def test_second_escalation_joins(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    done = loopkit("-C", str(ws), *ESCALATE)
    assert done.returncode == 2
    assert done.stdout.startswith("already blocked: joined request ")
    assert len(list((ws / "requests").glob("*.json"))) == 1


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
    assert loopkit("-C", str(ws), "doctor").returncode == 0


def test_doctor_names_each_problem_with_its_fix(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text("{% if %}")
    env = clean_env(LOOPKIT_HITL_CHANNEL="telegram")
    done = loopkit("-C", str(ws), "doctor", env=env)
    assert done.returncode == 1
    out = done.stdout
    assert "LOOPKIT_HITL_TELEGRAM_TOKEN is not set: create a bot with @BotFather" in out
    assert "LOOPKIT_HITL_TELEGRAM_CHAT is not set" in out
    assert "BLOCKED.md.j2:1: template syntax error" in out
    assert "3 problem(s)" in out


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


def test_help_exits_0(ws: Path) -> None:
    for args in (["--help"], ["escalate", "--help"], ["check", "--help"]):
        done = loopkit(*args, cwd=ws)
        assert done.returncode == 0 and "Usage:" in done.stdout


def test_a_bug_is_one_redacted_line_and_a_logged_traceback(
    ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopkit import log as events
    from loopkit.cli.context import App, report_bug
    from loopkit.redact import Redactor

    monkeypatch.setenv("LOOPKIT_HITL_TELEGRAM_TOKEN", TOKEN)
    app = App(root=ws)
    app.config()
    try:
        raise RuntimeError(f"POST https://api.telegram.org/bot{TOKEN}/sendMessage failed")
    except RuntimeError as exc:
        report_bug(exc, app)
        report_bug(exc, app, traceback=True)
    finally:
        events.setup(None, Redactor(), console=False)  # no handlers left for other tests
    err = capsys.readouterr().err
    first = err.split("\n")[0]
    assert first.startswith("loopkit: unexpected error (a bug, please report it): RuntimeError")
    assert "Traceback (most recent call last)" in err  # only with traceback=True
    events = (ws / ".loopkit" / "events.jsonl").read_text()
    assert "unexpected_error" in events and "Traceback" in events
    assert TOKEN not in err + events


def test_read_commands_take_json(ws: Path) -> None:
    done = loopkit("-C", str(ws), "doctor", "--json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    assert data["problems"] == 0 and data["findings"]


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ('[escalation]\nblocked_file = "BLOCKED.md"\n', True),
        ("[escalation]\nchannel = 'none'\nblocked_file = 'BLOCKED.md'  # the default\n", True),
        ('[escalation]\nblocked_file = "STOP.md"\n', False),
        ('[loop]\nblocked_file = "BLOCKED.md"\n', False),  # wrong table: the parser says so
        ('escalation.blocked_file = "BLOCKED.md"\n', False),
        ('[escalation]\nblocked_file = "BLOCKED.md"\nblocked_file = "X.md"\n', False),
        ('[escalation]\nblocked_file = "BLOCKED.md\n', False),  # broken: the parser reports it
    ],
)
def test_check_reads_the_default_blocked_file_line_without_a_parser(text: str, plain: bool) -> None:
    from loopkit.check import _sets_the_default

    assert _sets_the_default(text) is plain


def test_check_in_a_workspace_loopkit_init_wrote(ws: Path) -> None:
    assert loopkit("-C", str(ws), "init", "--agent", "true").returncode == 0
    assert loopkit("-C", str(ws), "check").returncode == 0
    (ws / "BLOCKED.md").write_text("# Blocked\n")
    assert loopkit("-C", str(ws), "check").returncode == 2


def test_a_relative_workspace_is_resolved_once(tmp_path: Path) -> None:
    """`loopkit -C ws run` from the parent: every file lands in ws/, none in ws/ws/."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "loopkit.toml").write_text('[loop]\nagent = "true"\npause = "0s"\n')
    done = loopkit("-C", "ws", "run", "--max-iterations", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (ws / ".loopkit" / "events.jsonl").is_file()
    assert (ws / ".loopkit" / "state.json").is_file()
    assert not (ws / "ws").exists()
