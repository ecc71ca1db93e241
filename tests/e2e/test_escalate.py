"""``loopkit escalate`` end to end: BLOCKED.md and its template, the record, the message sent
and what is refused."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fakeserver import FakeServer, Reply
from helpers import clean_env, lk, loopkit, read_only_prefix

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


def test_second_escalation_joins(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    done = loopkit("-C", str(ws), *ESCALATE)
    assert done.returncode == 2
    assert done.stdout.startswith("already blocked: joined request ")
    assert len(list((ws / "requests").glob("*.json"))) == 1


def test_the_answer_hint_offers_only_the_letters_there_are(ws: Path) -> None:
    two = ["escalate", "-q", "Which flow?", "-c", "c", "-a", "a",
           "--choice", "Flow A — old", "--choice", "Flow B — new"]  # fmt: skip
    assert lk(ws, *two).returncode == 2
    text = (ws / "BLOCKED.md").read_text()
    assert "(or B, or your own words)" in text and "C," not in text


def test_four_choices_is_bad_input(ws: Path) -> None:
    args = [*ESCALATE, "--choice", "C", "--choice", "D"]
    done = loopkit("-C", str(ws), *args)
    assert done.returncode == 65
    assert "4 choices given" in done.stderr
    assert not (ws / "BLOCKED.md").exists() and not (ws / "requests").exists()


def test_blocked_file_that_is_a_folder_keeps_the_question(ws: Path) -> None:
    (ws / "BLOCKED.md").mkdir()
    done = loopkit("-C", str(ws), *ESCALATE)
    assert done.returncode == 65 and "BLOCKED.md is a folder, not a file" in done.stderr
    assert "the question is saved" in done.stderr and "Traceback" not in done.stderr
    assert loopkit("-C", str(ws), "check").returncode == 65
    (saved,) = (ws / "requests").glob("*.json")
    # Once the folder is gone, the next start raises the block the question was saved for.
    (ws / "BLOCKED.md").rmdir()
    assert loopkit("-C", str(ws), "status").returncode == 0
    assert saved.stem in (ws / "BLOCKED.md").read_text()
    assert loopkit("-C", str(ws), "check").returncode == 2


def test_read_only_workspace_is_a_clear_error(ws: Path) -> None:
    prefix = read_only_prefix(ws)
    done = loopkit("-C", str(ws), *ESCALATE, prefix=prefix)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "Read-only file system" in line or "Permission denied" in line
    assert "make the workspace writable" in line
    assert not (ws / "BLOCKED.md").exists()


def test_an_override_without_the_marker_falls_back_and_doctor_says_so(tmp_path: Path) -> None:
    (tmp_path / "loopkit.toml").write_text('[loop]\nagent = "true"\n')  # a loop run starts
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "BLOCKED.md.j2").write_text("# Blocked\n\n{{ question }}\n")
    done = loopkit("-C", str(tmp_path), "escalate", "-q", "Which flow?", "-c", "c", "-a", "a",
                   "--choice", "A — a")  # fmt: skip
    assert done.returncode == 2
    assert "<!-- loopkit request:" in (tmp_path / "BLOCKED.md").read_text()  # answerable
    assert "lacks the marker" in done.stderr
    doctor = loopkit("-C", str(tmp_path), "doctor")
    assert doctor.returncode == 1 and "lacks the marker" in doctor.stdout


def test_a_marker_past_the_first_4096_characters_counts_as_missing(ws: Path) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "BLOCKED.md.j2").write_text(
        "# Blocked\n{{ question }}\n{% for a in attempted %}- {{ a }}\n{% endfor %}"
        "<!-- loopkit request: {{ request_id }} -->\n"
    )
    long = ["x" * 600] * 10
    args = [a for item in long for a in ("-a", item)]
    done = lk(ws, "escalate", "-q", "Which flow?", "-c", "c", *args, "--choice", "A — a")
    assert done.returncode == 2 and "lacks the marker" in done.stderr
    assert lk(ws, "unblock", "--reply", "A").returncode == 0  # answerable: the fallback has it


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


def test_common_words_of_the_dial_command_survive_in_the_log(tmp_path: Path) -> None:
    # A gateway that reads the message and fails; its URL is only an argument (no network).
    code = "import sys; sys.stdin.read(); sys.exit(1)"
    dial = f'{sys.executable} -c "{code}" --title loopkit https://gateway.invalid/my-secret-topic'
    done = loopkit(
        "-C", str(tmp_path), "escalate", "--question", "Does loopkit work?", "--context", "c",
        "--attempted", "a", "--choice", "A — b",
        env=clean_env(LOOPKIT_HITL_CHANNEL="dial", LOOPKIT_HITL_DIAL_CMD=dial),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    events = (tmp_path / ".loopkit" / "events.jsonl").read_text()
    assert '"logger": "loopkit.escalation"' in events and "Does loopkit work?" in events
    assert "my-secret-topic" not in events + done.stderr + done.stdout
