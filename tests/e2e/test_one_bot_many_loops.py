"""SPEC §10: many loops on one machine share one bot — one poller (the lease), every tap
routed to its own workspace, exactly once, against a fake Bot API with Telegram's semantics
(an offset confirms for everyone; a second concurrent getUpdates gets the first a 409)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from fakeserver import FakeServer
from helpers import PHONE_CHAT, Daemon, phone_env, runs_file, wait_until, write_config

ANA = {"id": 111, "first_name": "Ana"}
AGENT = """\
import os
open(os.environ["LOOPKIT_WORKSPACE"] + ".runs.txt", "a").write(
    os.environ.get("LOOPKIT_DECISION", "") + "\\n"
)
if not os.path.exists("asked"):  # ask once, by hand, as seed 001 tells agents to
    open("asked", "w").close()
    name = os.path.basename(os.getcwd())
    choices = "## Choices:\\n- A) Yes — go\\n- B) No — stop\\n"
    open("BLOCKED.md", "w").write(f"## Question:\\nProceed with {name}?\\n{choices}")
"""


def workspace(root: Path, name: str) -> Path:
    ws = root / name
    ws.mkdir()
    (ws / "agent.py").write_text(AGENT)
    write_config(
        ws,
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n'
        '[escalation]\nchannel = "telegram"\n',
    )
    return ws


def request_of(ws: Path) -> tuple[str, int]:
    def found() -> tuple[str, int] | None:
        for path in (ws / "requests").glob("*.json"):
            record = json.loads(path.read_text())
            ids = [e["message_id"] for e in record["delivery"] if e.get("ok")]
            if ids:
                return record["request_id"], ids[0]
        return None

    result = wait_until(found, 20, f"the request of {ws.name} delivered")
    assert isinstance(result, tuple)
    return result


def tap(server: FakeServer, request_id: str, index: int, message_id: int) -> None:
    server.push_update(
        callback_query={
            "id": f"cb-{request_id}",
            "from": ANA,
            "message": {"message_id": message_id, "chat": {"id": PHONE_CHAT}, "text": "five"},
            "data": f"{request_id}:{index}",
        }
    )


def resumed_with(ws: Path, decision: str) -> bool:
    runs = runs_file(ws)
    return runs.exists() and decision in runs.read_text().splitlines()


def test_three_loops_one_bot_every_tap_lands_in_its_own_loop(
    tmp_path: Path, server: FakeServer
) -> None:
    spaces = [workspace(tmp_path, name) for name in ("shop", "blog", "api")]
    daemons = [Daemon(ws, env=phone_env(server)) for ws in spaces]
    try:
        asked = [request_of(ws) for ws in spaces]
        for (request_id, message_id), index in zip(asked, (0, 1, 0), strict=True):
            tap(server, request_id, index, message_id)
        for ws, decision in zip(spaces, ("yes", "no", "yes"), strict=True):
            wait_until(lambda ws=ws, d=decision: resumed_with(ws, d), 20, f"{ws.name} resumed")
        acks = [c.body["text"] for c in server.calls("/answerCallbackQuery")]
        assert len(acks) == 3 and not any("unknown" in a for a in acks), acks
        # One poller for the machine: loopkit's own processes never fight with 409s.
        assert server.conflicts == 0
        # The poller's own report of one, never a bare "409": a random request id or the
        # test's folder (pytest-409) in the log has those digits too.
        assert not any("another process is polling this bot" in d.stderr() for d in daemons)
        assert not any("HTTP 409" in d.stderr() for d in daemons)
    finally:
        for daemon in daemons:
            daemon.stop()


def test_the_lease_fails_over_when_the_holder_is_killed(tmp_path: Path, server: FakeServer) -> None:
    first, second = workspace(tmp_path, "one"), workspace(tmp_path, "two")
    with Daemon(first, env=phone_env(server)) as holder:
        request_of(first)
        wait_until(lambda: server.calls("getUpdates"), 10, "the holder polling")
        with Daemon(second, env=phone_env(server)) as waiter:
            request_id, message_id = request_of(second)
            os.killpg(holder.proc.pid, signal.SIGKILL)
            holder.proc.wait(10)
            tap(server, request_id, 0, message_id)
            wait_until(lambda: resumed_with(second, "yes"), 10, "the other loop took the lease")
            assert waiter.proc.poll() is None


def say(server: FakeServer, text: str) -> None:
    server.push_update(
        message={"message_id": 900, "from": ANA, "chat": {"id": PHONE_CHAT}, "text": text}
    )


def test_plain_messages_answer_the_one_open_block_or_list_them(
    tmp_path: Path, server: FakeServer
) -> None:
    first, second = workspace(tmp_path, "shop"), workspace(tmp_path, "blog")
    with Daemon(first, env=phone_env(server)), Daemon(second, env=phone_env(server)):
        (first_id, first_message), _ = request_of(first), request_of(second)
        say(server, "yes")  # two are open: the bot says how to answer instead

        def the_list() -> list[object]:
            return [c for c in server.calls("/sendMessage") if "are open" in c.body["text"]]

        listed = wait_until(the_list, 10, "the list of open questions")
        assert isinstance(listed, list)
        text = listed[0].body["text"]
        assert "2 questions are open" in text and "Proceed with shop?" in text
        assert "Proceed with blog?" in text and "reply to the question's message" in text
        tap(server, first_id, 0, first_message)
        wait_until(lambda: resumed_with(first, "yes"), 10, "shop resumed")
        say(server, "B")  # now exactly one is open: a plain message answers it
        wait_until(lambda: resumed_with(second, "no"), 10, "blog resumed by the plain message")


def test_a_tap_no_workspace_knows_is_an_unknown_request(tmp_path: Path, server: FakeServer) -> None:
    ws = workspace(tmp_path, "shop")
    with Daemon(ws, env=phone_env(server)):
        request_of(ws)
        tap(server, "nosuchrequest", 0, 999)
        acks = wait_until(lambda: server.calls("/answerCallbackQuery"), 10, "the ack")
        assert isinstance(acks, list) and acks[0].body["text"] == "unknown request"
