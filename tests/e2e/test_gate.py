"""``loopkit gate -- CMD…``: the exact command runs only after its approval, once; what the
human is shown keeps the command readable and its secrets out."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import files, gate, lk, loopkit, record


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


def test_a_qualified_approval_never_runs_the_command(ws: Path) -> None:
    """SPEC §28: ``approve in dry-run mode`` (and the like) is feedback, told back so."""
    command = ["sh", "-c", "touch ran.txt"]
    for reply in ("approve in dry-run mode", "approve nothing", "approve: false"):
        assert gate(ws, *command).returncode == 2
        answered = loopkit("-C", str(ws), "unblock", "--reply", reply)
        assert answered.returncode == 0, answered.stderr
        assert "not approved: reply `approve` alone to approve" in answered.stderr
        assert gate(ws, *command).returncode == 3 and not (ws / "ran.txt").exists()


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


def test_gate_approved_but_not_runnable(ws: Path) -> None:
    assert gate(ws, "no-such-program-xyz").returncode == 2
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    done = gate(ws, "no-such-program-xyz")
    assert done.returncode == 127
    assert "cannot run" in done.stderr and "Traceback" not in done.stderr


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


def test_the_gate_digest_is_not_shown_beside_the_masked_command(ws: Path) -> None:
    assert lk(ws, "gate", "--", "mysql", "--password", "4821", "prod").returncode == 2
    [path] = files(ws)
    digest = json.loads(path.read_text())["gate"]["sha256"]
    assert digest not in (ws / "BLOCKED.md").read_text()
    assert "4821" not in (ws / "BLOCKED.md").read_text() + path.read_text()


WORD_HINT = "reject  # or --reply approve: it cannot be undone"


def test_no_hint_offers_a_letter_that_approves_a_drop_table(ws: Path) -> None:
    assert gate(ws, "psql", "-c", "DROP TABLE users").returncode == 2
    rid = str(open_gate_request(ws)["request_id"])
    hint = (ws / "BLOCKED.md").read_text().rstrip().splitlines()[-1]
    assert "--reply A" not in hint and "`loopkit unblock --reply reject`" in hint
    assert "`--reply approve` approves it: it cannot be undone" in hint
    [row] = json.loads(loopkit("inbox", "--json", cwd=ws.parent).stdout)
    assert row["answer"] == f"loopkit reply --request-id {rid} --reply {WORD_HINT}"
    assert "--reply A" not in loopkit("inbox", cwd=ws.parent).stdout
    # Pasted as it is, the hint rejects: it never runs the command.
    pasted = loopkit(*row["answer"].split("  #")[0].split()[1:], cwd=ws.parent)
    assert pasted.returncode == 0, pasted.stderr
    assert record(ws, rid)["resolution"]["outcome"] == "rejected"  # type: ignore[index]


def test_an_irreversible_ask_hints_the_word_an_ordinary_one_the_letter(ws: Path) -> None:
    approval = ["ask", "-p", "ask", "--kind", "approval", "--json"]
    p0 = json.loads(lk(ws, *approval, "-s", "Publish 2.0 to PyPI", "--prompt", "Publish 2.0?",
                       "--irreversible").stdout)  # fmt: skip
    plain = json.loads(lk(ws, *approval, "-s", "Rename a helper", "--prompt", "Rename it?",
                          "--confidence", "0.2").stdout)  # fmt: skip
    listed = json.loads(loopkit("inbox", "--json", cwd=ws.parent).stdout)
    rows = {r["request_id"]: r for r in listed}
    assert rows[p0["request_id"]]["answer"].endswith(f"--reply {WORD_HINT}")
    assert rows[plain["request_id"]]["answer"].endswith("--reply A")


def gate_json(ws: Path, *command: str) -> tuple[int, dict[str, object], str]:
    """``loopkit gate --json``: its exit code, the one JSON object on stdout, its stderr."""
    done = loopkit("-C", str(ws), "gate", "--json", "--", *command, cwd=ws)
    outcome = json.loads(done.stdout)  # stdout is the outcome and nothing else
    assert isinstance(outcome, dict) and outcome["exit"] == done.returncode
    return done.returncode, outcome, done.stderr


def test_gate_json_tells_ran_and_exited_2_from_waiting(ws: Path) -> None:
    command = ["sh", "-c", "echo the-command-spoke; exit 2"]
    code, waiting, _ = gate_json(ws, *command)
    assert (code, waiting["state"]) == (2, "waiting")
    assert waiting["request_id"] == open_gate_request(ws)["request_id"]
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    code, ran, err = gate_json(ws, *command)
    assert (code, ran["state"]) == (2, "ran") and ran["request_id"] == waiting["request_id"]
    assert "the-command-spoke" in err  # the command's stdout went to stderr


def test_gate_json_tells_ran_and_exited_3_from_rejected(ws: Path) -> None:
    rejected = ["sh", "-c", "touch rejected.txt; exit 3"]
    assert gate_json(ws, *rejected)[1]["state"] == "waiting"
    assert loopkit("-C", str(ws), "unblock", "--reply", "reject: no").returncode == 0
    code, outcome, _ = gate_json(ws, *rejected)
    assert (code, outcome["state"]) == (3, "rejected") and "no" in str(outcome["message"])
    assert not (ws / "rejected.txt").exists()
    approved = ["sh", "-c", "touch approved.txt; exit 3"]
    assert gate_json(ws, *approved)[1]["state"] == "waiting"
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    code, outcome, _ = gate_json(ws, *approved)
    assert (code, outcome["state"]) == (3, "ran") and (ws / "approved.txt").exists()


def test_gate_json_tells_cannot_start_from_ran_and_exited_127(ws: Path) -> None:
    assert gate_json(ws, "no-such-program-xyz")[1]["state"] == "waiting"
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    code, outcome, _ = gate_json(ws, "no-such-program-xyz")
    assert (code, outcome["state"]) == (127, "cannot_run")
    assert gate_json(ws, "sh", "-c", "exit 127")[1]["state"] == "waiting"
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    code, outcome, _ = gate_json(ws, "sh", "-c", "exit 127")
    assert (code, outcome["state"]) == (127, "ran")


def test_gate_without_json_keeps_stdout_for_the_command(ws: Path) -> None:
    command = ["sh", "-c", "echo the-command-spoke"]
    first = gate(ws, *command)
    assert first.returncode == 2 and first.stdout == ""
    assert loopkit("-C", str(ws), "unblock", "--reply", "approve").returncode == 0
    ran = gate(ws, *command)
    assert ran.returncode == 0 and ran.stdout == "the-command-spoke\n"
