"""Answering from the phone, end to end: ``loopkit run`` + a fake Bot API on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fakeserver import FakeServer, Reply
from helpers import (
    PHONE_CHAT,
    PHONE_TOKEN,
    Daemon,
    loopkit,
    offset_file,
    phone_env,
    runs_file,
    wait_until,
    write_config,
)

ANA = {"id": 111, "first_name": "Ana"}


def setup(ws: Path, extra: str = "") -> None:
    """A failing loop with tasks to skip, so the supervisor offers Retry / Skip / Abort."""
    (ws / "agent.sh").write_text(
        'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}" >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
    )
    (ws / "PLAN.md").write_text("- [ ] the first task\n- [ ] the second task\n")
    write_config(
        ws,
        '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "exit 1"\npause = "0s"\n'
        'task_file = "PLAN.md"\n'
        f'[escalation]\nchannel = "telegram"\n{extra}',
    )


def runs(ws: Path) -> list[str]:
    return runs_file(ws).read_text().splitlines()


def sent(server: FakeServer, count: int = 1) -> tuple[str, int]:
    call = server.wait_for("/sendMessage", count)[count - 1]
    data = call.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
    request_id = data.rpartition(":")[0]
    return request_id, 100 + count  # the fake server numbers messages from 101


def tap(server: FakeServer, request_id: str, index: int, message_id: int, **over: Any) -> int:
    return server.push_update(
        callback_query={
            "id": f"cb-{request_id}-{index}",
            "from": over.get("user", ANA),
            "message": {"message_id": message_id, "chat": {"id": PHONE_CHAT}, "text": "five lines"},
            "data": f"{request_id}:{index}",
        }
    )


def test_a_tap_resumes_the_loop_with_the_decision(ws: Path, server: FakeServer) -> None:
    setup(ws)
    with Daemon(ws, env=phone_env(server, LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS="111")) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        tap(server, request_id, 0, message_id)
        daemon.wait_state(status="blocked", iteration=6)
        assert runs(ws)[3] == "4|retry"
        assert not (ws / "BLOCKED.md").read_text().count(f"request: {request_id} ")
        [edit] = server.calls("/editMessageText")
        assert "Resolved: Retry with a hint — by Ana" in edit.body["text"]
        assert edit.body["reply_markup"] == {"inline_keyboard": []}
        last = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
        assert last["via"] == "telegram" and last["by"] == "111 (Ana)"


def test_a_stranger_decides_nothing(ws: Path, server: FakeServer) -> None:
    setup(ws)
    with Daemon(ws, env=phone_env(server, LOOPKIT_HITL_TELEGRAM_ALLOWED_USERS="111")) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        tap(server, request_id, 2, message_id, user={"id": 999, "first_name": "Eve"})
        wait_until(lambda: server.calls("/answerCallbackQuery"), what="the stranger's ack")
        assert server.calls("/answerCallbackQuery")[0].body["text"] == "not allowed"
        request = json.loads((ws / "requests" / f"{request_id}.json").read_text())
        assert request["status"] == "open" and (ws / "BLOCKED.md").exists()
        tap(server, request_id, 1, message_id)  # the right person, after
        daemon.wait_state(status="blocked", iteration=6)
        assert runs(ws)[3] == "4|skip"


def test_an_abort_tap_exits_3(ws: Path, server: FakeServer) -> None:
    setup(ws)
    with Daemon(ws, env=phone_env(server)) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        tap(server, request_id, 2, message_id)
        assert daemon.wait() == 3
    assert len(runs(ws)) == 3
    # Exiting at once must not cut off the acknowledgement, the edit or the offset.
    assert server.calls("/answerCallbackQuery")[0].body["text"].startswith("Resolved: Abort")
    assert "Resolved: Abort the loop" in server.calls("/editMessageText")[0].body["text"]
    assert json.loads(offset_file(PHONE_TOKEN).read_text())["offset"] > 0
    # And the answer is applied once: a restart does not abort again.
    restarted = loopkit("-C", str(ws), "run", "--max-iterations", "1", env=phone_env(server))
    assert restarted.returncode == 0, restarted.stderr
    assert len(runs(ws)) == 4


def test_an_answer_sent_while_down_is_applied_after_the_restart(
    ws: Path, server: FakeServer
) -> None:
    setup(ws)
    with Daemon(ws, env=phone_env(server)) as first:
        first.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        wait_until(lambda: server.calls("/getUpdates"), what="the first long poll")
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait()
    tap(server, request_id, 0, message_id)  # nobody polls now
    with Daemon(ws, env=phone_env(server)) as second:
        second.wait_state(status="blocked", iteration=6)
        assert runs(ws)[3] == "4|retry"
        assert len(server.calls("/sendMessage")) == 2  # the old block's was not sent again


def test_a_restart_after_an_answer_does_not_apply_it_again(ws: Path, server: FakeServer) -> None:
    setup(ws)
    with Daemon(ws, env=phone_env(server)) as first:
        first.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        update_id = tap(server, request_id, 0, message_id)
        first.wait_state(status="blocked", iteration=6)
        os.kill(first.proc.pid, signal.SIGKILL)
        first.wait()
    calls = len(server.calls("/getUpdates"))
    with Daemon(ws, env=phone_env(server)) as second:
        second.wait_state(status="blocked", iteration=6)
        wait_until(lambda: len(server.calls("/getUpdates")) > calls, what="a poll after restart")
        assert server.offsets()[calls] == update_id + 1  # resumes after the handled tap
    assert [r.split("|")[1] for r in runs(ws)] == ["", "", "", "retry", "", ""]
    assert len(server.calls("/answerCallbackQuery")) == 1


def test_a_tap_after_a_quiet_week_lands(ws: Path, server: FakeServer) -> None:
    """SPEC §16: the last update was seen 8 days ago and Telegram has restarted its ids
    lower since; the stored offset above them must not swallow the tap."""
    setup(ws)
    quiet = datetime.now(UTC) - timedelta(days=8)
    offset_file(PHONE_TOKEN).parent.mkdir(parents=True)
    offset_file(PHONE_TOKEN).write_text(json.dumps({
        "bot": PHONE_TOKEN.split(":")[0], "offset": 1001, "seen_at": quiet.isoformat(),
        "updated_at": quiet.isoformat(),
    }))  # fmt: skip
    server.restart_ids()
    with Daemon(ws, env=phone_env(server)) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        assert tap(server, request_id, 1, message_id) < 1001
        daemon.wait_state(status="blocked", iteration=6)
        assert runs(ws)[3] == "4|skip"
    assert server.calls("/answerCallbackQuery")[0].body["text"].startswith("Resolved: Skip")
    assert json.loads(offset_file(PHONE_TOKEN).read_text())["offset"] < 1001


def test_409_is_one_warning_and_a_backoff(ws: Path, server: FakeServer) -> None:
    setup(ws)
    conflict = {"ok": False, "error_code": 409, "description": "Conflict: other getUpdates"}
    server.queue("/getUpdates", Reply(409, conflict), Reply(409, conflict))
    with Daemon(ws, env=phone_env(server)) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        request_id, message_id = sent(server)
        wait_until(lambda: len(server.calls("/getUpdates")) >= 3, timeout=20, what="3 polls")
        tap(server, request_id, 1, message_id)
        daemon.wait_state(status="blocked", iteration=6)
        errors = daemon.stderr()
    assert errors.count("another process is polling this bot") == 1
    assert PHONE_TOKEN not in errors and "Traceback" not in errors


def test_a_timeout_edits_the_message(ws: Path, server: FakeServer) -> None:
    setup(ws, 'timeout_minutes = 0.004\ntimeout_action = "abort"\n')
    with Daemon(ws, env=phone_env(server)) as daemon:
        assert daemon.wait() == 3
    [edit] = server.calls("/editMessageText")
    assert "Expired after 0.004 min" in edit.body["text"]
    assert "loopkit aborted the loop (exit 3)" in edit.body["text"]
    assert edit.body["reply_markup"] == {"inline_keyboard": []}  # it takes no answer now
    # A tap on a stale copy of the message, after a restart, is acknowledged: it is refused.
    request_id, message_id = sent(server)
    with Daemon(ws, env=phone_env(server)) as daemon:
        daemon.wait_state(status="blocked")
        tap(server, request_id, 1, message_id)
        wait_until(lambda: server.calls("/answerCallbackQuery"), what="the tap's ack")
        assert "expired" in server.calls("/answerCallbackQuery")[0].body["text"]
        request = json.loads((ws / "requests" / f"{request_id}.json").read_text())
        assert request["status"] == "expired" and (ws / "BLOCKED.md").exists()
        daemon.stop()


def test_unblocking_by_hand_edits_the_message(ws: Path, server: FakeServer) -> None:
    setup(ws)
    with Daemon(ws, env=phone_env(server)) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        (ws / "BLOCKED.md").unlink()
        daemon.wait_state(status="blocked", iteration=6)
        wait_until(lambda: server.calls("/editMessageText"), what="the edit")
    assert "Unblocked by hand" in server.calls("/editMessageText")[0].body["text"]
