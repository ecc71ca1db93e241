"""``dismiss`` in process: close an open request nobody will answer — never an answer — once,
and lift its block when the block is its own (SPEC section 16)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.answering import answer, dismiss
from loopkit.config import Config
from loopkit.errors import EXIT_ABORTED, RequestConflict, RequestNotFound
from loopkit.escalation.ask import Question, ask
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.dismiss import ghosts
from loopkit.escalation.escalator import Escalator
from loopkit.escalation.gate import gate
from loopkit.requests.answer import is_human_decision, outcome_of
from loopkit.requests.outcome import exit_code
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


def setup(ws: Path) -> tuple[Config, RequestStore]:
    cfg = config_mod.load(ws)
    return cfg, RequestStore(Workspace.of(cfg))


def block(cfg: Config, store: RequestStore, question: str = "Which flow?") -> Request:
    result = Escalator(cfg, store=store).escalate(
        Escalation(question, "checkout", ["read PROMPT.md"],
                   [parse_choice("Flow A — old API"), parse_choice("Flow B — migration")])
    )  # fmt: skip
    return result.request


def test_a_dismissal_closes_the_request_and_lifts_its_own_block(ws: Path) -> None:
    cfg, store = setup(ws)
    rid = block(cfg, store).request_id
    done = dismiss(store, rid, by="ana", via="cli", reason="the agent was restarted")
    assert done.removed and not (ws / "BLOCKED.md").exists()
    record = store.load(rid)
    res = record.resolution
    assert record.status == "dismissed" and res is not None
    assert (res.outcome, res.by, res.via) == ("dismissed", "ana", "cli")
    assert res.reason == "the agent was restarted" and res.chosen_option is None
    assert res.resolved_at is not None
    # Never an answer: nothing chosen, nothing approved, no decision for an agent.
    assert outcome_of(record) == "dismissed" and not is_human_decision(record)
    assert exit_code(record) == EXIT_ABORTED


def test_a_request_is_dismissed_once_and_then_takes_no_answer(ws: Path) -> None:
    cfg, store = setup(ws)
    rid = block(cfg, store).request_id
    dismiss(store, rid, by="ana", via="cli")
    before = store.path(rid).read_text()
    with pytest.raises(RequestConflict, match="dismissed by ana"):
        dismiss(store, rid, by="bo", via="cli")
    with pytest.raises(RequestConflict, match="dismissed by ana"):
        answer(store, rid, "A", by="bo", via="cli")
    assert store.path(rid).read_text() == before


def test_an_answered_request_is_not_dismissed(ws: Path) -> None:
    cfg, store = setup(ws)
    rid = block(cfg, store).request_id
    answer(store, rid, "B", by="bo", via="telegram")
    with pytest.raises(RequestConflict, match="already resolved"):
        dismiss(store, rid, by="ana", via="cli")
    record = store.load(rid)
    assert record.status == "resolved" and record.resolution is not None
    assert record.resolution.chosen_option == "flow-b"


def test_no_such_request(ws: Path) -> None:
    _, store = setup(ws)
    with pytest.raises(RequestNotFound):
        dismiss(store, "nope", by="ana", via="cli")


def test_a_joined_question_leaves_the_standing_block_alone(ws: Path) -> None:
    cfg, store = setup(ws)
    first = block(cfg, store, "Which flow?")
    asked = ask(cfg, Question(situation="Two layouts.", policy="ask", prompt="Which layout?",
                              options=("Grid", "List"), block=True), store=store)  # fmt: skip
    assert asked.record is not None and asked.joined == first.request_id
    done = dismiss(store, asked.record.request_id, by="ana", via="cli")
    assert not done.removed and (ws / "BLOCKED.md").exists()
    assert store.load(first.request_id).status == "open"


def test_a_hand_written_block_is_never_removed(ws: Path) -> None:
    cfg, store = setup(ws)
    rid = block(cfg, store).request_id
    (ws / "BLOCKED.md").unlink()
    (ws / "BLOCKED.md").write_text("# Blocked\n\nmy own pause\n")
    done = dismiss(store, rid, by="ana", via="cli")
    assert not done.removed and (ws / "BLOCKED.md").read_text() == "# Blocked\n\nmy own pause\n"


def test_a_dismissed_gate_never_runs_its_command(ws: Path) -> None:
    cfg, store = setup(ws)
    argv = [sys.executable, "-c", "open('ran', 'w').write('1')"]
    first = gate(cfg, argv, cwd=str(ws), store=store)
    dismiss(store, first.record.request_id, by="ana", via="cli")
    again = gate(cfg, argv, cwd=str(ws), store=store)
    assert again.exit_code == EXIT_ABORTED and "dismissed" in again.message
    assert not (ws / "ran").exists()


def test_a_bare_escalation_whose_file_was_deleted_is_a_ghost(ws: Path) -> None:
    cfg, store = setup(ws)
    standing = block(cfg, store)
    assert ghosts(store) == []  # its BLOCKED.md stands: it is waited on
    (ws / "BLOCKED.md").unlink()
    assert [r.request_id for r in ghosts(store)] == [standing.request_id]
    # A question without a block of its own (`ask` without --block) is no ghost: an agent
    # waits on it with `requests wait` or MCP.
    ask(cfg, Question(situation="Two layouts.", policy="ask", prompt="Which layout?",
                      options=("Grid", "List")), store=store)  # fmt: skip
    # Another block stands now, naming another request: the first is still a ghost.
    second = block(cfg, store, "Which theme?")
    assert [r.request_id for r in ghosts(store)] == [standing.request_id]
    dismiss(store, standing.request_id, by="ana", via="cli")
    assert ghosts(store) == [] and store.load(second.request_id).status == "open"
