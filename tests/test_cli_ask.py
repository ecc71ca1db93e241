"""ask / reply / unblock / requests / gate, through the installed loopkit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fakeserver import FakeServer
from helpers import LOOPKIT, Daemon, clean_env, loopkit, write_config

POLICY = "Escalate anything irreversible; proceed on routine refactors."


def ask(
    ws: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), "ask", "--policy", POLICY, *args, env=env)


def ask_json(ws: Path, *args: str) -> dict[str, object]:
    done = ask(ws, *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def record(ws: Path, request_id: str) -> dict[str, object]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def files(ws: Path) -> list[Path]:
    return sorted((ws / "requests").glob("*.json")) if (ws / "requests").exists() else []


# --- the decision table -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needs_human"),
    [
        (["-s", "Rename the CSS class .btn-primary to .button-primary", "--confidence", "0.9"],
         False),
        (["-s", "Add a created_by column to orders following the existing updated_by pattern",
          "--category", "ontology", "--confidence", "0.9"], False),
        (["-s", "Drop the production users table and rebuild it", "--confidence", "0.99",
          "--prompt", "Drop and rebuild the production users table?"], True),
        (["-s", "Add a paid service (Algolia, $29/month) for search", "--category", "third-party",
          "--confidence", "0.9", "--prompt", "Add Algolia at $29/month for search?"], True),
        (["-s", "Switch the public API from REST to GraphQL", "--category", "one-way-door",
          "--confidence", "0.95", "--prompt", "Switch the public API to GraphQL?"], True),
        (["-s", "Which of two equally good date libraries?", "--confidence", "0.3"], True),
        (["-s", "Which of two equally good date libraries?"], True),
    ],
)  # fmt: skip
def test_decision_table(ws: Path, args: list[str], needs_human: bool) -> None:
    data = ask_json(ws, *args)
    assert data["needs_human"] is needs_human, data["reason"]
    if needs_human:
        assert isinstance(data["request_id"], str) and len(files(ws)) == 1
        assert record(ws, data["request_id"])["status"] == "open"
    else:
        assert data["request_id"] is None and data["request"] is None
        assert files(ws) == [] and not (ws / "BLOCKED.md").exists()


def test_p0_defaults_the_timeout_to_abort(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\ntimeout_action = "skip"\n')
    p0 = ask_json(ws, "-s", "Force-push main", "--prompt", "Force-push main?")
    assert p0["request"]["timeout_default"]["action"] == "abort"  # type: ignore[index]
    plain = ask_json(ws, "-s", "Which date library?", "--key", "other")
    assert plain["request"]["timeout_default"]["action"] == "skip"  # type: ignore[index]


def test_the_prompt_block(ws: Path) -> None:
    done = ask(
        ws, "-s", "Which flow?", "--option", "Flow A=a", "--option", "Flow B=b",
        "--recommend", "b", "--attach", "docs/flows.md", "--timeout", "45",
    )  # fmt: skip
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "Which flow?",
        "  A) Flow A",
        "  B) Flow B  (recommended)",
        "On timeout (45 min): abort",
        "Context: docs/flows.md",
    ]
    assert lines[5].startswith("Request: requests/")


# --- the rubric ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "rule"),
    [
        (["--prompt", "x" * 120 + "?"], "stem-length"),
        (["--prompt", "Go?", "--option", "y" * 25], "option-length"),
        (["--prompt", "Go?", "--option", "A", "--option", "B", "--option", "C", "--option", "D"],
         "option-count"),
        (["--prompt", "Ship it? \U0001f680"], "emoji"),
        (["--prompt", "Go?", "--option", "Ship \u2705"], "emoji"),
        (["--prompt", "Should I skip the test? Should I email Ana?"], "one-question"),
    ],
)  # fmt: skip
def test_rubric_refusals_name_the_rule_and_write_nothing(
    ws: Path, args: list[str], rule: str
) -> None:
    done = ask(ws, "-s", "Unsure which way to go", *args)
    assert done.returncode == 65, done.stderr
    assert f"rubric: {rule}:" in done.stderr
    assert files(ws) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--prompt", "x" * 119 + "?"],
        ["--prompt", "Go?", "--option", "y" * 24],
        ["--prompt", "Go?", "--option", "A", "--option", "B", "--option", "C"],
        ["--prompt", "Use Postgres or SQLite?"],
    ],
)
def test_rubric_boundaries_that_pass(ws: Path, args: list[str]) -> None:
    assert ask(ws, "-s", "Unsure which way to go", *args).returncode == 0
    assert len(files(ws)) == 1


# --- keys, blocks, ids --------------------------------------------------------------------


def test_same_key_returns_the_open_request(ws: Path, server: FakeServer) -> None:
    env = clean_env(
        LOOPKIT_HITL_CHANNEL="telegram",
        LOOPKIT_HITL_TELEGRAM_TOKEN="1234:AAKeyTestTokenNotRealAtAll_xyz",
        LOOPKIT_HITL_TELEGRAM_CHAT="1",
        LOOPKIT_HITL_TELEGRAM_API=server.url,
    )
    args = ["-s", "Which flow?", "--key", "flow-q", "--block", "--json"]
    first = ask(ws, *args, env=env)
    second = ask(ws, *args, env=env)
    assert first.returncode == second.returncode == 2  # --block: blocked
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["request_id"] == b["request_id"]
    assert len(files(ws)) == 1
    assert len(server.calls("/sendMessage")) == 1
    assert (ws / "BLOCKED.md").read_text().count(f"loopkit request: {a['request_id']}") == 1


@pytest.mark.parametrize(
    "args",
    [
        ["reply", "--request-id", "../x", "--reply", "A"],
        ["requests", "show", "../../etc/passwd"],
        ["ask", "-s", "Which?", "-p", "p", "--request-id", "../x"],
        ["requests", "wait", "a/b"],
    ],
)
def test_path_traversal_ids_are_refused(ws: Path, args: list[str]) -> None:
    done = loopkit("-C", str(ws), *args)
    assert done.returncode == 65, done.stderr
    assert "is not allowed" in done.stderr
    assert files(ws) == []


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
    assert after["jobclaw_channel"] == "whatsapp" and after["schema_version"] == 1
    assert after["status"] == "resolved"


# --- answering ----------------------------------------------------------------------------


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


def test_requests_wait_returns_when_answered(ws: Path) -> None:
    request_id = str(ask_json(ws, "-s", "Which flow?")["request_id"])
    waiter = subprocess.Popen(
        [str(LOOPKIT), "-C", str(ws), "requests", "wait", request_id, "--timeout", "30"],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    assert (
        loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "C").returncode == 0
    )
    out, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 3  # C) Abort: aborted
    assert json.loads(out)["outcome"] == "aborted"


def test_requests_listing_filters(ws: Path) -> None:
    q = str(ask_json(ws, "-s", "Which flow?")["request_id"])
    a = str(
        ask_json(ws, "-s", "Deploy?", "--kind", "approval", "--prompt", "Deploy?")["request_id"]
    )
    loopkit("-C", str(ws), "reply", "--request-id", q, "--reply", "A")
    rows = json.loads(loopkit("-C", str(ws), "requests", "--json").stdout)
    assert {r["request_id"] for r in rows} == {q, a}  # oldest first, by the second
    opened = json.loads(loopkit("-C", str(ws), "requests", "--status", "open", "--json").stdout)
    assert [r["request_id"] for r in opened] == [a]
    kinds = json.loads(loopkit("-C", str(ws), "requests", "--kind", "approval", "--json").stdout)
    assert [r["request_id"] for r in kinds] == [a]
    shown = json.loads(loopkit("-C", str(ws), "requests", "show", q).stdout)
    assert shown["resolution"]["chosen_option"] == "proceed"


# --- unblock ------------------------------------------------------------------------------

ESCALATE = ["escalate", "-q", "Which flow?", "-c", "checkout", "-a", "read PROMPT.md",
            "--choice", "Flow A — old API", "--choice", "Flow B — migration"]  # fmt: skip


def test_unblock_with_a_reply(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [path] = files(ws)
    done = loopkit("-C", str(ws), "unblock", "--reply", "B", env=clean_env(LOOPKIT_HUMAN="ana"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["chosen_option"] == "flow-b"
    assert not (ws / "BLOCKED.md").exists()
    resolution = json.loads(path.read_text())["resolution"]
    assert resolution["by"] == "ana" and resolution["via"] == "cli"
    again = loopkit("-C", str(ws), "unblock")
    assert again.returncode == 0 and "not blocked" in again.stderr


def test_unblock_without_a_reply(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    [path] = files(ws)
    resolution = json.loads(path.read_text())["resolution"]
    assert resolution["parsed_decision"] == "unblocked by hand"
    assert resolution["outcome"] == "unblocked"


def test_unblock_reply_when_already_answered_is_a_conflict(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [path] = files(ws)
    request_id = path.stem
    assert (
        loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "A").returncode == 0
    )
    done = loopkit("-C", str(ws), "unblock", "--reply", "B")
    assert done.returncode == 4
    assert json.loads(path.read_text())["resolution"]["chosen_option"] == "flow-a"
    assert (ws / "BLOCKED.md").exists()


def test_unblock_reply_reaches_the_running_loop(ws: Path) -> None:
    (ws / "agent.sh").write_text('echo "$LOOPKIT_ITERATION|${LOOPKIT_DECISION-}" >> runs.txt\n')
    write_config(
        ws,
        '[loop]\nagent = ["/bin/sh", "agent.sh"]\nverify = "exit 1"\npause = "0s"\n',
    )
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked", iteration=3)
        done = loopkit("-C", str(ws), "unblock", "--reply", "use Decimal, not float")
        assert done.returncode == 0, done.stderr
        daemon.wait_state(status="blocked", iteration=6)
    lines = (ws / "runs.txt").read_text().splitlines()
    assert lines[3] == "4|use Decimal, not float"
    assert lines[4] == "5|"


# --- gate ---------------------------------------------------------------------------------


def gate(ws: Path, *command: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return loopkit("-C", str(ws), "gate", "--", *command, cwd=cwd or ws)


def open_gate_request(ws: Path) -> dict[str, object]:
    [row] = json.loads(loopkit("-C", str(ws), "requests", "--status", "open", "--json").stdout)
    assert isinstance(row, dict)
    return row


def test_gate_runs_only_after_approval_of_that_command(ws: Path) -> None:
    command = ["sh", "-c", "touch ran.txt; exit 7"]
    first = gate(ws, *command)
    assert first.returncode == 2 and not (ws / "ran.txt").exists()
    assert (ws / "BLOCKED.md").exists()
    request = open_gate_request(ws)
    shown = record(ws, str(request["request_id"]))
    assert shown["kind"] == "approval" and "touch ran.txt" in str(shown["prompt"])
    assert len(str(shown["gate"]["sha256"])) == 64  # type: ignore[index]
    assert gate(ws, *command).returncode == 2  # still waiting: no second request
    assert len(files(ws)) == 1
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    ran = gate(ws, *command)
    assert ran.returncode == 7 and (ws / "ran.txt").exists()
    # An approval is used once: the same command asks again.
    (ws / "ran.txt").unlink()
    assert gate(ws, *command).returncode == 2 and not (ws / "ran.txt").exists()
    assert len(files(ws)) == 2


def test_gate_rejected_does_not_run(ws: Path) -> None:
    command = ["sh", "-c", "touch ran.txt"]
    assert gate(ws, *command).returncode == 2
    assert loopkit("-C", str(ws), "unblock", "--reply", "reject: not on a Friday").returncode == 0
    done = gate(ws, *command)
    assert done.returncode == 3 and "not on a Friday" in done.stderr
    assert not (ws / "ran.txt").exists()


def test_gate_changed_command_is_a_new_request(ws: Path, tmp_path: Path) -> None:
    assert gate(ws, "sh", "-c", "touch a.txt").returncode == 2
    first = open_gate_request(ws)
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    # A different argument: not the approved command.
    assert gate(ws, "sh", "-c", "touch b.txt").returncode == 2
    assert not (ws / "b.txt").exists()
    second = open_gate_request(ws)
    assert second["request_id"] != first["request_id"]
    # The approved argv from another folder: not the approved command either.
    other = tmp_path / "elsewhere"
    other.mkdir()
    (ws / "BLOCKED.md").unlink()
    assert gate(ws, "sh", "-c", "touch a.txt", cwd=other).returncode == 2
    assert not (other / "a.txt").exists()
    # The approved one, from its own folder, runs.
    (ws / "BLOCKED.md").unlink()
    assert gate(ws, "sh", "-c", "touch a.txt").returncode == 0
    assert (ws / "a.txt").exists()


def test_a_deferral_keeps_the_review_open_under_a_running_loop(ws: Path) -> None:
    write_config(ws, '[loop]\nagent = "true"\nverify = "exit 0"\npause = "1s"\n')
    asked = loopkit("-C", str(ws), "ask", "-s", "Check the menu on a phone", "-p", POLICY,
                    "--kind", "review", "--prompt", "Is the menu easy to close?", "--block",
                    "--json")  # fmt: skip
    assert asked.returncode == 2
    request_id = json.loads(asked.stdout)["request_id"]
    with Daemon(ws) as daemon:
        daemon.wait_state(status="blocked")
        done = loopkit("-C", str(ws), "unblock", "--reply", "defer: no phone at hand")
        assert done.returncode == 0, done.stderr
        daemon.wait_state(status="running")
    assert record(ws, request_id)["status"] == "deferred"
    assert record(ws, request_id)["resolution"] is None


def test_ask_and_gate_while_blocked_keep_their_own_request(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json"]
    first = json.loads(ask(ws, *args).stdout)
    assert first["request"]["prompt"] == "Which currency?"
    assert first["request"]["joined_block"]
    again = json.loads(ask(ws, *args).stdout)
    assert again["request_id"] == first["request_id"]
    gated = gate(ws, "sh", "-c", "true")
    assert gated.returncode == 2
    waiting = gated.stderr.split("requests/")[1].split(".json")[0]
    assert (ws / "requests" / f"{waiting}.json").exists()
    # The open block goes; asking again raises the joined question as its own block.
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    raised = json.loads(ask(ws, *args).stdout)
    assert raised["request_id"] == first["request_id"]
    assert f"loopkit request: {first['request_id']}" in (ws / "BLOCKED.md").read_text()


def test_wait_on_a_question_unblocked_by_hand_is_not_a_choice(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [path] = files(ws)
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    waited = loopkit("-C", str(ws), "requests", "wait", path.stem)
    assert waited.returncode == 3 and json.loads(waited.stdout)["outcome"] == "unblocked"


def test_gate_approved_but_not_runnable(ws: Path) -> None:
    assert gate(ws, "no-such-program-xyz").returncode == 2
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    done = gate(ws, "no-such-program-xyz")
    assert done.returncode == 127
    assert "cannot run" in done.stderr and "Traceback" not in done.stderr


def test_asking_again_while_blocked_leaves_the_open_block_alone(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [block] = files(ws)
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json"]
    assert ask(ws, *args).returncode == 2
    seen = record(ws, block.stem)["updated_at"]  # what the human read
    assert ask(ws, *args).returncode == 2  # the agent asks again, and again
    assert ask(ws, *args).returncode == 2
    assert len(record(ws, block.stem)["joined"]) == 1  # type: ignore[arg-type]
    guarded = loopkit("-C", str(ws), "reply", "--request-id", block.stem, "--reply", "A",
                      "--expected-updated-at", str(seen))  # fmt: skip
    assert guarded.returncode == 0, guarded.stderr


def test_raising_a_joined_question_sends_outside_the_store_lock(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    other = ask_json(ws, "-s", "Which date library?", "--key", "dates")
    args = ["-s", "Which currency?", "--key", "currency", "--block"]
    assert ask(ws, *args).returncode == 2
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    # The gateway answers another request while it sends: that needs the store lock.
    dial = f"{LOOPKIT} -C {ws} reply --request-id {other['request_id']} --reply A"
    env = clean_env(LOOPKIT_HITL_CHANNEL="dial", LOOPKIT_HITL_DIAL_CMD=dial)
    raised = ask(ws, *args, env=env)
    assert raised.returncode == 2, raised.stderr
    assert record(ws, str(other["request_id"]))["status"] == "resolved"


def test_a_question_that_joined_a_hand_written_block_is_raised_when_it_goes(ws: Path) -> None:
    (ws / "BLOCKED.md").write_text("Waiting for the design review.\n")
    args = ["-s", "Which currency?", "--key", "currency", "--block", "--json"]
    joined = json.loads(ask(ws, *args).stdout)
    (ws / "BLOCKED.md").unlink()
    raised = json.loads(ask(ws, *args).stdout)
    assert raised["request_id"] == joined["request_id"]
    assert f"loopkit request: {joined['request_id']}" in (ws / "BLOCKED.md").read_text()


def test_asking_again_with_block_raises_a_question_asked_without(ws: Path) -> None:
    args = ["-s", "Which currency?", "--key", "currency", "--json"]
    first = json.loads(ask(ws, *args).stdout)
    assert not (ws / "BLOCKED.md").exists()
    raised = json.loads(ask(ws, *args, "--block").stdout)
    assert raised["request_id"] == first["request_id"] and len(files(ws)) == 1
    assert f"loopkit request: {first['request_id']}" in (ws / "BLOCKED.md").read_text()
    again = ask(ws, *args, "--block")  # once raised, asking again changes nothing
    assert again.returncode == 2 and len(files(ws)) == 1


def test_gate_shows_the_command_with_its_password_masked(ws: Path) -> None:
    url = "postgres://app:hunter2pw@db.internal/prod"
    argv = ["sh", "-c", 'test "$0" = "$1" && touch ran', url, url]
    assert gate(ws, *argv).returncode == 2
    [path] = files(ws)
    for text in (path.read_text(), (ws / "BLOCKED.md").read_text()):
        assert "hunter2pw" not in text and "postgres://app:***@db.internal/prod" in text
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    assert gate(ws, *argv).returncode == 0  # approved: the real argv runs, password and all
    assert (ws / "ran").exists()
