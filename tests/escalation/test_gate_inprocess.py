"""``gate`` in process: one exact command, run only once approved, and only once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.answering import answer
from loopkit.config import Config
from loopkit.errors import EXIT_ABORTED, EXIT_BLOCKED, BadInput
from loopkit.escalation.gate import GateResult, command_hash, gate
from loopkit.redact import mask_command
from loopkit.requests.answer import timed_out
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

RUN = [sys.executable, "-c", 'open("ran", "w").write("1"); raise SystemExit(7)']


def setup(ws: Path) -> tuple[Config, RequestStore, str]:
    cfg = config_mod.load(ws)
    return cfg, RequestStore(Workspace.of(cfg)), str(cfg.workspace)


def files(ws: Path) -> list[Path]:
    return sorted((ws / "requests").glob("*.json"))


def approve(store: RequestStore, result: GateResult, reply: str = "approve") -> None:
    """Answer the gate's request as a human would, then lift the block."""
    answer(store, result.record.request_id, reply, by="ana", via="cli")
    blocked = store.workspace.blocked
    if blocked.exists():
        blocked.unlink()


def test_the_first_call_asks_and_blocks(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    first = gate(cfg, RUN, cwd=cwd)
    assert first.exit_code == EXIT_BLOCKED and not (ws / "ran").exists()
    assert first.state == "waiting"
    record = store.load(first.record.request_id)
    assert record.kind == "approval" and record.status == "open"
    assert [o.value for o in record.options] == ["approved", "rejected", "changes_requested"]
    assert record.prompt.startswith("Approve running `") and len(record.prompt) <= 120
    assert "SystemExit(7)" in record.situation and record.gate is not None
    assert record.gate["argv"] == RUN and record.gate["sha256"] == command_hash(RUN, cwd)
    assert record.gate["cwd"] == cwd and record.request_key == f"gate:{command_hash(RUN, cwd)}"
    text = (ws / "BLOCKED.md").read_text()
    assert f"loopkit request: {record.request_id}" in text
    assert record.gate["sha256"] not in text  # the digest stays in the record only
    again = gate(cfg, RUN, cwd=cwd)  # still waiting: no second request
    assert again.exit_code == EXIT_BLOCKED
    assert again.record.request_id == record.request_id and len(files(ws)) == 1


def test_an_approved_command_runs_once(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    first = gate(cfg, RUN, cwd=cwd)
    approve(store, first)
    ran = gate(cfg, RUN, cwd=cwd)
    assert ran.exit_code == 7 and (ws / "ran").read_text() == "1"
    assert ran.state == "ran" and ran.to_dict() == {
        "state": "ran", "exit": 7, "request_id": first.record.request_id, "message": ran.message
    }  # fmt: skip
    assert ran.record.request_id == first.record.request_id
    assert store.load(first.record.request_id).consumed_at is not None
    # An approval is used once: the same command asks again, and does not run.
    (ws / "ran").unlink()
    third = gate(cfg, RUN, cwd=cwd)
    assert third.exit_code == EXIT_BLOCKED and not (ws / "ran").exists()
    assert third.record.request_id != first.record.request_id and len(files(ws)) == 2
    assert store.load(third.record.request_id).status == "open"


def test_a_rejected_command_does_not_run(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    first = gate(cfg, RUN, cwd=cwd)
    approve(store, first, "reject: not on a Friday")
    done = gate(cfg, RUN, cwd=cwd)
    assert done.exit_code == EXIT_ABORTED and "not on a Friday" in done.message
    assert done.state == "rejected"
    assert not (ws / "ran").exists()


@pytest.mark.parametrize("reply", ["Request changes — use --dry-run", "looks risky to me"])
def test_changes_requested_is_not_an_approval(ws: Path, reply: str) -> None:
    cfg, store, cwd = setup(ws)
    approve(store, gate(cfg, RUN, cwd=cwd), reply)
    done = gate(cfg, RUN, cwd=cwd)
    assert done.exit_code == EXIT_ABORTED and "changes_requested" in done.message
    assert not (ws / "ran").exists()


def test_a_changed_command_is_a_new_request(ws: Path, tmp_path: Path) -> None:
    cfg, store, cwd = setup(ws)
    first = gate(cfg, RUN, cwd=cwd)
    approve(store, first)
    changed = [*RUN, "extra"]  # a different argument: not the approved command
    second = gate(cfg, changed, cwd=cwd)
    assert second.exit_code == EXIT_BLOCKED and not (ws / "ran").exists()
    assert second.record.request_id != first.record.request_id
    (ws / "BLOCKED.md").unlink()
    other = tmp_path / "elsewhere"
    other.mkdir()
    elsewhere = gate(cfg, RUN, cwd=str(other))  # the approved argv from another folder
    assert elsewhere.exit_code == EXIT_BLOCKED and not (other / "ran").exists()
    assert elsewhere.record.request_id not in (first.record.request_id, second.record.request_id)
    (ws / "BLOCKED.md").unlink()
    assert gate(cfg, RUN, cwd=cwd).exit_code == 7  # the approved one, from its own folder
    assert (ws / "ran").exists() and len(files(ws)) == 3


def test_secrets_are_masked_in_the_record_but_the_real_argv_runs(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    script = 'import sys; open("ran", "w").write(sys.argv[1])'
    argv = [sys.executable, "-c", script, "--token=abcdef123456"]
    first = gate(cfg, argv, cwd=cwd)
    assert first.exit_code == EXIT_BLOCKED
    [path] = files(ws)
    stored = json.loads(path.read_text())
    assert stored["gate"]["argv"] == [*argv[:3], "--token=***"]
    assert stored["gate"]["sha256"] == command_hash(argv, cwd)
    assert stored["gate"]["sha256"] != command_hash(stored["gate"]["argv"], cwd)
    for text in (path.read_text(), (ws / "BLOCKED.md").read_text(), first.message):
        assert "abcdef123456" not in text
    assert "--token=***" in stored["situation"]
    approve(store, first)
    assert gate(cfg, argv, cwd=cwd).exit_code == 0
    assert (ws / "ran").read_text() == "--token=abcdef123456"


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["psql", "postgres://app:prod@db/prod"], ["psql", "postgres://app:***@db/prod"]),
        (["git", "checkout", "3f9a1c0b7d2e4f5a6b7c8d9e"], None),  # no guessing by shape
        (["terraform", "destroy", "-target=aws_instance.web01"], None),
        (["curl", "-u", "admin:admin", "https://x/admin", "--data", "user=admin"],
         ["curl", "-u", "admin:***", "https://x/admin", "--data", "user=admin"]),
        (["curl", "-u", "sk_test_4eC39HqLyjWDarjtT1zdp7dc:", "https://x"],
         ["curl", "-u", "***", "https://x"]),
        (["x", "--token=Ab&cdefghijk"], ["x", "--token=***"]),
        (["curl", "-d", "text=hi",
          "https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdEFGHijklMNOPqrstUVWX"],
         ["curl", "-d", "text=hi", "https://***"]),
        (["curl", "https://api.telegram.org/bot123456789:AAEhBP0av28Q1s-Zz9aBcDeFgHiJkLmNoPq/getMe"],
         ["curl", "https://api.telegram.org/bot***/getMe"]),
        (["sh", "-c", "psql postgres://u:hunter2pw@h/db; mysql --password s3cr3t9"],
         ["sh", "-c", "psql postgres://u:***@h/db; mysql --password ***"]),
    ],
)  # fmt: skip
def test_gate_shows_the_command_with_only_its_secrets_masked(
    argv: list[str], shown: list[str] | None
) -> None:
    assert mask_command(argv) == (argv if shown is None else shown)


def test_an_expired_gate_request_is_not_an_approval(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    first = gate(cfg, RUN, cwd=cwd)
    request_id = first.record.request_id
    store.resolve(request_id, timed_out(request_id, "abort"), status="expired")
    done = gate(cfg, RUN, cwd=cwd)
    assert done.exit_code == EXIT_ABORTED and "expired" in done.message
    assert done.state == "rejected"
    assert not (ws / "ran").exists()


def test_approved_but_not_runnable(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    argv = ["no-such-program-xyz"]
    approve(store, gate(cfg, argv, cwd=cwd))
    done = gate(cfg, argv, cwd=cwd)
    assert done.exit_code == 127 and "cannot run" in done.message
    assert done.state == "cannot_run"


def test_the_command_output_goes_where_it_is_sent(ws: Path, tmp_path: Path) -> None:
    cfg, store, cwd = setup(ws)
    argv = [sys.executable, "-c", "print('the-command-spoke')"]
    approve(store, gate(cfg, argv, cwd=cwd))
    with (tmp_path / "out").open("wb") as out:
        assert gate(cfg, argv, cwd=cwd, stdout=out.fileno()).state == "ran"
    assert (tmp_path / "out").read_text() == "the-command-spoke\n"


def test_wait_returns_the_open_request_when_its_timeout_runs_out(ws: Path) -> None:
    cfg, store, cwd = setup(ws)
    first = gate(cfg, RUN, cwd=cwd, wait=True, timeout=0)
    assert first.exit_code == EXIT_BLOCKED and not (ws / "ran").exists()
    approve(store, first)
    assert gate(cfg, RUN, cwd=cwd, wait=True, timeout=0).exit_code == 7


def test_no_command_is_refused(ws: Path) -> None:
    cfg, _, cwd = setup(ws)
    with pytest.raises(BadInput, match="no command given"):
        gate(cfg, [], cwd=cwd)
    assert not (ws / "requests").exists() and not (ws / "BLOCKED.md").exists()
