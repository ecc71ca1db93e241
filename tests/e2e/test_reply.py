"""``loopkit reply``: one answer per request, the first one stands; records old and broken."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import ESCALATE, LOOPKIT, ask_json, clean_env, files, lk, loopkit, record


def test_unknown_and_corrupt_records(ws: Path) -> None:
    missing = loopkit("-C", str(ws), "reply", "--request-id", "nope", "--reply", "A")
    assert missing.returncode == 66
    (ws / "requests").mkdir()
    (ws / "requests" / "bad.json").write_text('{"request_id": "bad",')
    corrupt = loopkit("-C", str(ws), "reply", "--request_id", "bad", "--reply", "A")
    assert corrupt.returncode == 65 and "not valid JSON" in corrupt.stderr
    assert (ws / "requests" / "bad.json").read_text() == '{"request_id": "bad",'


def test_a_record_from_an_older_schema_is_answered_and_keeps_its_fields(ws: Path) -> None:
    (ws / "requests").mkdir()
    old = {
        "request_id": "old1",
        "created_at": "2026-11-01T10:00:00Z",
        "situation": "Captcha at submit",
        "policy": "escalate",
        "prompt": "Solve the captcha?",
        "options": [{"label": "Solve it", "value": "solve"}, {"label": "Skip", "value": "skip"}],
        "timeout_default": {"after_minutes": 30, "action": "skip"},
        "context_refs": ["shot.png"],
        "status": "open",
        "jobclaw_channel": "whatsapp",
    }
    (ws / "requests" / "old1.json").write_text(json.dumps(old))
    done = loopkit("-C", str(ws), "reply", "--request-id", "old1", "--reply", "skip")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["chosen_option"] == "skip"
    after = record(ws, "old1")
    assert after["jobclaw_channel"] == "whatsapp" and after["schema_version"] == 2
    assert after["status"] == "resolved"


def test_reply_then_a_second_reply_is_a_conflict(ws: Path) -> None:
    request_id = str(ask_json(ws, "-s", "Which flow?", "--option", "Flow A", "--option",
                              "Flow B")["request_id"])  # fmt: skip
    done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "b)")
    assert done.returncode == 0
    decision = json.loads(done.stdout)
    assert set(decision) == {
        "request_id", "chosen_option", "free_text", "parsed_decision", "resolved_at"
    }  # fmt: skip
    assert decision["chosen_option"] == "flow-b"
    before = (ws / "requests" / f"{request_id}.json").read_text()
    again = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "A")
    assert again.returncode == 4 and "the first answer stands" in again.stderr
    assert (ws / "requests" / f"{request_id}.json").read_text() == before


def test_an_empty_reply_uses_up_nothing(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    for empty in ("", "   "):
        done = lk(ws, "unblock", "--reply", empty)
        assert done.returncode == 64 and "empty reply" in done.stderr
        done = lk(ws, "reply", "--request-id", path.stem, "--reply", empty)
        assert done.returncode == 64
    assert record(ws, path.stem)["status"] == "open" and (ws / "BLOCKED.md").exists()


def test_expected_updated_at(ws: Path) -> None:
    request_id = str(ask_json(ws, "-s", "Which flow?")["request_id"])
    stale = loopkit(
        "-C", str(ws), "reply", "--request-id", request_id, "--reply", "A",
        "--expected-updated-at", "2020-01-01T00:00:00.000Z",
    )  # fmt: skip
    assert stale.returncode == 4 and "changed since" in stale.stderr
    current = str(record(ws, request_id)["updated_at"])
    fresh = loopkit(
        "-C", str(ws), "reply", "--request-id", request_id, "--reply", "A",
        "--expected-updated-at", current,
    )  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr


def test_a_malformed_expected_updated_at_is_a_usage_error(ws: Path) -> None:
    assert lk(ws, *ESCALATE).returncode == 2
    [path] = files(ws)
    done = lk(ws, "reply", "--request-id", path.stem, "--reply", "A",
              "--expected-updated-at", "yesterday")  # fmt: skip
    assert done.returncode == 64 and "updated_at" in done.stderr
    assert record(ws, path.stem)["status"] == "open"


def test_sixteen_concurrent_replies_one_winner(ws: Path) -> None:
    request_id = str(ask_json(ws, "-s", "Which flow?")["request_id"])
    replies = ["A", "B", "C", "proceed", "skip", "abort", "1", "2", "3", "free text one",
               "p", "s", "a", "work on it", "B)", "maybe later"]  # fmt: skip
    procs = [
        subprocess.Popen(
            [str(LOOPKIT), "-C", str(ws), "reply", "--request-id", request_id, "--reply", text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
        )
        for text in replies
    ]
    results = [(p.wait(60), p.stdout.read() if p.stdout else "") for p in procs]
    for p in procs:
        for pipe in (p.stdout, p.stderr):
            if pipe:
                pipe.close()
    winners = [out for code, out in results if code == 0]
    assert len(winners) == 1
    assert sorted(code for code, _ in results) == [0] + [4] * 15
    final = record(ws, request_id)["resolution"]
    assert isinstance(final, dict)
    assert json.loads(winners[0])["parsed_decision"] == final["parsed_decision"]


def test_approvals_keep_the_reason_and_never_guess_approval(ws: Path) -> None:
    def approval(reply: str) -> dict[str, object]:
        request_id = str(
            ask_json(
                ws,
                "-s",
                "Deploy v2 to production",
                "--kind",
                "approval",
                "--prompt",
                "Deploy v2 to production now?",
            )["request_id"]
        )
        done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", reply)
        assert done.returncode == 0, done.stderr
        resolution = record(ws, request_id)["resolution"]
        assert isinstance(resolution, dict)
        wait = loopkit("-C", str(ws), "requests", "wait", request_id)
        resolution["wait_exit"] = wait.returncode
        return resolution

    ok = approval("approve")
    assert ok["outcome"] == "approved" and ok["wait_exit"] == 0
    no = approval("reject: the migration is not reversible")
    assert no["outcome"] == "rejected" and no["reason"] == "the migration is not reversible"
    assert no["wait_exit"] == 3
    changes = approval("Request changes — rename the flag first")
    assert changes["outcome"] == "changes_requested"
    assert changes["reason"] == "rename the flag first" and changes["wait_exit"] == 4
    feedback = approval("looks risky to me")
    assert feedback["outcome"] == "changes_requested" and feedback["wait_exit"] == 4
    assert feedback["reason"] == "looks risky to me"


def test_review_deferral_keeps_it_open(ws: Path) -> None:
    request_id = str(
        ask_json(
            ws,
            "-s",
            "Check the menu on a phone",
            "--kind",
            "review",
            "--prompt",
            "Is the menu easy to close one-handed?",
        )["request_id"]
    )
    defer = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "defer")
    assert defer.returncode == 0
    assert record(ws, request_id)["status"] == "deferred"
    assert record(ws, request_id)["resolution"] is None
    waiting = loopkit("-C", str(ws), "requests", "wait", request_id, "--timeout", "0.2")
    assert waiting.returncode == 2
    listed = json.loads(loopkit("-C", str(ws), "requests", "--status", "deferred", "--json").stdout)
    assert [r["request_id"] for r in listed] == [request_id]
    done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "approve")
    assert done.returncode == 0
    assert loopkit("-C", str(ws), "requests", "wait", request_id).returncode == 0
