"""A ladder of people, end to end (SPEC §29): a real ``loopkit run`` and ``loopkit serve``, the
fake ntfy server and the fake PagerDuty Events API on 127.0.0.1.

Ana (ntfy, at once) does not answer; the on-call rotation (PagerDuty) is paged; Ben (ntfy,
after 2 s) is asked when his ``after`` passes, taps a button on his push; the loop resumes
once with his answer; Ana is told who answered, and her late tap is told so; the incident
resolves."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fakentfy import FakeNtfy
from fakepagerduty import TEST_KEY, FakePagerDuty
from helpers import LOOPKIT, Daemon, clean_env, loopkit, runs_file, wait_until, write_config


@contextmanager
def serving(env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """``loopkit serve`` on a free loopback port: its address."""
    out = tmp_path / "serve.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen([str(LOOPKIT), "serve", "--listen", "127.0.0.1:0"], env=env,
                                stdout=sink, stderr=subprocess.STDOUT, cwd=tmp_path,
                                start_new_session=True)  # fmt: skip
    try:
        found = wait_until(lambda: re.search(r"http://[\d.]+:\d+", out.read_text()), 20, "serve")
        assert isinstance(found, re.Match)
        yield found.group(0)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)


def team(ws: Path, ntfy: FakeNtfy) -> None:
    (ws / "agent.sh").write_text(
        'echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}" >> "$LOOPKIT_WORKSPACE.runs.txt"\n'
    )  # its run log beside the workspace: in it, it would be the agent's work
    write_config(
        ws,
        '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "exit 1"\npause = "0s"\n'
        "[escalation]\ntimeout_minutes = 60\n"
        f'[[escalation.people]]\nname = "Ana"\nchannel = "ntfy"\n'
        f'address = "{ntfy.topic_url("ana")}"\nafter = "0m"\n'
        '[[escalation.people]]\nname = "On call"\nchannel = "pagerduty"\nafter = "0m"\n'
        f'[[escalation.people]]\nname = "Ben"\nchannel = "ntfy"\n'
        f'address = "{ntfy.topic_url("ben")}"\nafter = "2s"\n',
    )


def test_ben_answers_from_his_push_after_ana_did_not(
    ws: Path, ntfy: FakeNtfy, pagerduty: FakePagerDuty, tmp_path: Path
) -> None:
    team(ws, ntfy)
    env = clean_env(LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY=TEST_KEY,
                    LOOPKIT_HITL_PAGERDUTY_API=pagerduty.url)  # fmt: skip
    with serving(env, tmp_path) as inbox:
        env["LOOPKIT_INBOX_URL"] = inbox
        with Daemon(ws, "--max-iterations", "4", env=env) as daemon:
            daemon.wait_state(status="blocked", iteration=3)
            [to_ana] = ntfy.wait_for("ana")
            request_id = json.loads(next((ws / "requests").glob("*.json")).read_text())[
                "request_id"
            ]
            incident = pagerduty.wait_for(request_id, "triggered")
            assert incident.events[0]["payload"]["summary"].startswith("[loopkit] blocked in ")
            assert ntfy.messages("ben") == []  # not before his two seconds
            [to_ben] = ntfy.wait_for("ben")
            assert "(also asked: Ana, On call)" in to_ben.message["message"]
            assert "(also asked" not in to_ana.message["message"]
            assert [a["label"] for a in to_ben.actions] == [
                "A) Retry with a hint", "B) Abort the loop", "Open"
            ]  # fmt: skip
            assert "token" not in json.dumps(to_ben.message)

            tapped = ntfy.tap(to_ben, 0)  # Ben: A) Retry with a hint
            assert tapped.status == 200 and "recorded: → A) Retry with a hint" in tapped.body
            assert daemon.wait(30) == 0
        # The loop resumed once, with Ben's answer.
        runs = runs_file(ws).read_text().splitlines()
        assert runs == ["1|", "2|", "3|", "4|retry"]
        record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
        assert (record["resolution"]["by"], record["resolution"]["via"]) == ("Ben", "ntfy")
        # Ana's push cannot be edited: she is told who answered; Ben gets his reading.
        told = ntfy.wait_for("ana", 2)[1].message["message"]
        assert told.endswith(f"{ws.name}: answered by Ben via ntfy: Retry with a hint")
        reading = ntfy.wait_for("ben", 2)[1].message["message"]
        assert "recorded: → A) Retry with a hint (letter A)" in reading
        resolved = pagerduty.wait_for(request_id, "resolved")
        assert resolved.actions == ["trigger", "resolve"]
        # Ana's late tap changes nothing, and she is told why.
        late = ntfy.tap(to_ana, 1)
        assert late.status == 409 and "already resolved by Ben via ntfy" in late.body
        last = ntfy.wait_for("ana", 3)[2].message["message"]
        assert "already answered — answered by Ben via ntfy" in last
        # Ben's own button, tapped again: used once.
        assert ntfy.tap(to_ben, 0).status == 409
        assert (
            json.loads((ws / "requests" / f"{request_id}.json").read_text())["resolution"]
            == (record["resolution"])
        )
    # Each follow-up went out once, though serve and run both tell (claimed in the record).
    assert len(ntfy.messages("ben")) == 2 and len(ntfy.messages("ana")) == 3
    assert [a.status for a in pagerduty.alerts] == ["resolved"]


def test_only_listed_people_answer_from_the_shell(ws: Path, ntfy: FakeNtfy) -> None:
    team(ws, ntfy)
    env = clean_env(LOOPKIT_INBOX_URL="http://127.0.0.1:9")
    blocked = loopkit("-C", str(ws), "escalate", "-q", "Ship it?", "-c", "c", "-a", "a",
                      "--choice", "Yes — go", "--choice", "No — wait", env=env)  # fmt: skip
    assert blocked.returncode == 2
    request_id = json.loads(next((ws / "requests").glob("*.json")).read_text())["request_id"]
    refused = loopkit("reply", "--request-id", request_id, "--reply", "A", "--by", "Cleo", env=env)
    assert refused.returncode == 77
    assert "Cleo is not among the people who may answer" in refused.stderr
    assert "Ana, On call, Ben" in refused.stderr and "--by NAME" in refused.stderr
    done = loopkit("reply", "--request-id", request_id, "--reply", "A", "--by", "ben", env=env)
    assert done.returncode == 0, done.stderr
    record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert record["resolution"]["by"] == "Ben"
    # Ana was asked on ntfy: the shell's answer is told to her before `reply` exits.
    told = ntfy.wait_for("ana", 2)[1].message["message"]
    assert told.endswith("answered by Ben via cli: Yes")
