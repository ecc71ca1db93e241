"""``unblock`` in process: answer the open block's request (or lift it), then remove the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.answering import Unblocked, unblock
from loopkit.config import Config
from loopkit.errors import BadInput, RequestConflict, RequestNotFound, UsageError
from loopkit.escalation.ask import Question, ask
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.requests.answer import apply_reply, timed_out
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace


def setup(ws: Path) -> tuple[Config, RequestStore]:
    cfg = config_mod.load(ws)
    return cfg, RequestStore(Workspace.of(cfg))


def lift(cfg: Config, *, reply: str | None) -> Unblocked:
    """``loopkit unblock [--reply …]`` by ana, through the answering service."""
    return unblock(RequestStore(Workspace.of(cfg)), reply=reply, by="ana", via="cli")


def block(cfg: Config, store: RequestStore) -> str:
    """Raise a block with two choices; returns its request id."""
    result = Escalator(cfg, store=store).escalate(
        Escalation(
            question="Which flow?",
            context="checkout",
            attempted=["read PROMPT.md"],
            choices=[parse_choice("Flow A — old API"), parse_choice("Flow B — migration")],
        )
    )
    assert result.joined is None and cfg.blocked_path.exists()
    return result.request.request_id


def test_not_blocked(ws: Path) -> None:
    cfg, _ = setup(ws)
    done = lift(cfg, reply=None)
    assert "not blocked" in done.message and done.decision is None
    with pytest.raises(RequestNotFound, match="not blocked"):
        lift(cfg, reply="A")
    assert not (ws / "requests").exists() and not (ws / "BLOCKED.md").exists()


def test_unblock_with_a_reply(ws: Path) -> None:
    cfg, store = setup(ws)
    request_id = block(cfg, store)
    done = lift(cfg, reply="B")
    assert done.decision is not None and done.decision["chosen_option"] == "flow-b"
    assert done.decision["request_id"] == request_id
    assert "answered" in done.message and not (ws / "BLOCKED.md").exists()
    record = store.load(request_id)
    res = record.resolution
    assert res is not None
    assert record.status == "resolved" and (res.by, res.via) == ("ana", "cli")
    assert "not blocked" in lift(cfg, reply=None).message


def test_unblock_without_a_reply(ws: Path) -> None:
    cfg, store = setup(ws)
    request_id = block(cfg, store)
    done = lift(cfg, reply=None)
    assert done.decision is None and "unblocked by hand" in done.message
    assert not (ws / "BLOCKED.md").exists()
    res = store.load(request_id).resolution
    assert res is not None
    assert res.parsed_decision == "unblocked by hand" and res.outcome == "unblocked"
    assert res.chosen_option is None and res.by == "ana"


def test_a_reply_after_a_reply_says_how_to_lift_the_block(ws: Path) -> None:
    cfg, store = setup(ws)
    request_id = block(cfg, store)
    # Answered while its BLOCKED.md stands (on another machine: its follower lifts it later)
    store.update(request_id, lambda r: apply_reply(r, "A", by="bo", via="telegram"))
    before = store.path(request_id).read_text()
    with pytest.raises(RequestConflict, match="`loopkit unblock` without --reply"):
        lift(cfg, reply="B")
    assert (ws / "BLOCKED.md").exists() and store.path(request_id).read_text() == before
    done = lift(cfg, reply=None)
    assert "already resolved" in done.message and not (ws / "BLOCKED.md").exists()
    res = store.load(request_id).resolution
    assert res is not None and res.chosen_option == "flow-a"


def test_an_expired_request_takes_no_reply_but_its_block_can_be_lifted(ws: Path) -> None:
    cfg, store = setup(ws)
    request_id = block(cfg, store)
    store.resolve(request_id, timed_out(request_id, "abort"), status="expired")
    before = store.path(request_id).read_text()
    with pytest.raises(RequestConflict) as caught:
        lift(cfg, reply="A")
    message = str(caught.value)
    assert "expired" in message and "loopkit unblock" in message
    assert "first answer stands" not in message
    assert (ws / "BLOCKED.md").exists() and store.path(request_id).read_text() == before
    done = lift(cfg, reply=None)
    assert "already expired" in done.message and not (ws / "BLOCKED.md").exists()
    assert store.load(request_id).status == "expired"


@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_reply_uses_up_nothing(ws: Path, empty: str) -> None:
    cfg, store = setup(ws)
    request_id = block(cfg, store)
    with pytest.raises(UsageError, match="empty reply"):
        lift(cfg, reply=empty)
    assert store.load(request_id).status == "open" and (ws / "BLOCKED.md").exists()


def test_a_deferred_review_stays_open(ws: Path) -> None:
    cfg, store = setup(ws)
    asked = ask(
        cfg,
        Question(
            situation="Check the menu on a phone",
            policy="p",
            kind="review",
            prompt="Is the menu easy to close?",
            block=True,
        ),
        store=store,
    )
    assert asked.record is not None and (ws / "BLOCKED.md").exists()
    done = lift(cfg, reply="defer: no phone at hand")
    assert "deferred (it stays open)" in done.message and not (ws / "BLOCKED.md").exists()
    record = store.load(asked.record.request_id)
    assert record.status == "deferred" and record.resolution is None


def test_a_hand_written_block_names_no_request(ws: Path) -> None:
    cfg, _ = setup(ws)
    (ws / "BLOCKED.md").write_text("Waiting for the design review.\n")
    with pytest.raises(RequestNotFound, match="names no loopkit request"):
        lift(cfg, reply="A")
    assert (ws / "BLOCKED.md").read_text() == "Waiting for the design review.\n"
    done = lift(cfg, reply=None)
    assert "named no loopkit request" in done.message and not (ws / "BLOCKED.md").exists()
    assert not (ws / "requests").exists()


def test_a_block_naming_a_missing_request(ws: Path) -> None:
    cfg, _ = setup(ws)
    (ws / "BLOCKED.md").write_text("# Blocked\n<!-- loopkit request: gone1 -->\n")
    with pytest.raises(RequestNotFound, match="gone1"):
        lift(cfg, reply="A")
    assert (ws / "BLOCKED.md").exists()
    done = lift(cfg, reply=None)
    assert "not found" in done.message and not (ws / "BLOCKED.md").exists()


@pytest.mark.parametrize("reply", [None, "A"])
def test_a_folder_at_blocked_md_is_refused(ws: Path, reply: str | None) -> None:
    cfg, _ = setup(ws)
    (ws / "BLOCKED.md").mkdir()
    with pytest.raises(BadInput, match="not a regular file"):
        lift(cfg, reply=reply)
    assert (ws / "BLOCKED.md").is_dir()


def test_the_configured_blocked_file_is_the_one_lifted(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\nblocked_file = "STOP.md"\n')
    cfg, store = setup(ws)
    request_id = block(cfg, store)
    assert (ws / "STOP.md").exists() and not (ws / "BLOCKED.md").exists()
    (ws / "BLOCKED.md").write_text("not loopkit's\n")
    assert lift(cfg, reply="A").decision is not None
    assert not (ws / "STOP.md").exists() and (ws / "BLOCKED.md").exists()
    assert store.load(request_id).status == "resolved"
