"""``ask`` in process: the needs-human decision, the rubric, keys, blocks and kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loopkit import config as config_mod
from loopkit.config import Config
from loopkit.errors import BadInput, UsageError
from loopkit.escalation.ask import Asked, Question, ask
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

POLICY = "Escalate anything irreversible; proceed on routine refactors."


def setup(ws: Path) -> tuple[Config, RequestStore]:
    cfg = config_mod.load(ws)
    return cfg, RequestStore(Workspace.of(cfg))


def asking(cfg: Config, store: RequestStore, situation: str, **fields: Any) -> Asked:
    return ask(cfg, Question(situation=situation, policy=POLICY, **fields), store=store)


def files(ws: Path) -> list[Path]:
    return sorted((ws / "requests").glob("*.json"))


def marker(request_id: str) -> str:
    return f"loopkit request: {request_id}"


@pytest.mark.parametrize(
    ("situation", "fields", "needs_human"),
    [
        ("Rename the CSS class .btn-primary to .button-primary", {"confidence": 0.9}, False),
        ("Add a created_by column to orders following the updated_by pattern",
         {"category": "ontology", "confidence": 0.9}, False),
        ("Drop the production users table and rebuild it",
         {"confidence": 0.99, "prompt": "Drop and rebuild the production users table?"}, True),
        ("Add a paid service (Algolia, $29/month) for search",
         {"category": "third-party", "confidence": 0.9, "prompt": "Add Algolia for search?"}, True),
        ("Switch the public API from REST to GraphQL",
         {"category": "one-way-door", "confidence": 0.95, "prompt": "Switch to GraphQL?"}, True),
        ("Rename a helper function", {"category": "security", "confidence": 0.99,
                                      "prompt": "Rename it?"}, True),
        ("Rename a helper function", {"irreversible": True, "confidence": 0.99,
                                      "prompt": "Rename it?"}, True),
        ("Which of two equally good date libraries?", {"confidence": 0.3}, True),
        ("Which of two equally good date libraries?", {}, True),
    ],
)  # fmt: skip
def test_the_decision_table(
    ws: Path, situation: str, fields: dict[str, Any], needs_human: bool
) -> None:
    cfg, store = setup(ws)
    asked = asking(cfg, store, situation, **fields)
    assert asked.needs_human is needs_human, asked.reason
    if needs_human:
        assert asked.record is not None and asked.record.status == "open"
        assert [p.stem for p in files(ws)] == [asked.record.request_id]
        assert store.load(asked.record.request_id).needs_human["reason"] == asked.reason  # type: ignore[index]
    else:
        assert asked.record is None and not (ws / "requests").exists()
    assert not (ws / "BLOCKED.md").exists()  # no --block: asked, not blocked


def test_p0_defaults_the_timeout_to_abort(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[escalation]\ntimeout_action = "skip"\n')
    cfg, store = setup(ws)
    p0 = asking(cfg, store, "Force-push main", prompt="Force-push main?")
    assert p0.record is not None and p0.record.timeout_default["action"] == "abort"
    plain = asking(cfg, store, "Which date library?", key="other")
    assert plain.record is not None and plain.record.timeout_default["action"] == "skip"


def test_options_recommendation_attachments_and_timeout(ws: Path) -> None:
    cfg, store = setup(ws)
    options = ("Flow A=a", "Flow B=b", "Flow C")
    asked = asking(
        cfg,
        store,
        "Which flow?",
        options=options,
        recommend="b",
        attach=("docs/flows.md",),
        timeout_minutes=45,
        request_id="flow-q",
    )
    record = store.load("flow-q")
    assert asked.record is not None and asked.record.request_id == "flow-q"
    assert [(o.label, o.value) for o in record.options] == [
        ("Flow A", "a"), ("Flow B", "b"), ("Flow C", "flow-c")
    ]  # fmt: skip
    assert record.recommendation == "b" and record.context_refs == ["docs/flows.md"]
    assert record.timeout_default == {"after_minutes": 45, "action": "queue"}  # SPEC §9
    assert record.prompt == "Which flow?" and record.block == "none"


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"prompt": "x" * 120 + "?"}, "stem-length"),
        ({"prompt": "Go?", "options": ("y" * 25,)}, "option-length"),
        ({"prompt": "Go?", "options": ("A", "B", "C", "D")}, "option-count"),
        ({"prompt": "Ship it? \U0001f680"}, "emoji"),
        ({"prompt": "Go?", "options": ("Ship \u2705",)}, "emoji"),
        ({"prompt": "Should I skip the test? Should I email Ana?"}, "one-question"),
    ],
)
def test_rubric_refusals_name_the_rule_and_write_nothing(
    ws: Path, fields: dict[str, Any], rule: str
) -> None:
    cfg, store = setup(ws)
    with pytest.raises(BadInput, match=f"rubric: {rule}:"):
        asking(cfg, store, "Unsure which way to go", block=True, **fields)
    assert not (ws / "requests").exists() and not (ws / "BLOCKED.md").exists()


@pytest.mark.parametrize(
    "fields",
    [
        {"prompt": "x" * 119 + "?"},
        {"prompt": "Go?", "options": ("y" * 24,)},
        {"prompt": "Go?", "options": ("A", "B", "C")},
        {"prompt": "Use Postgres or SQLite?"},
    ],
)
def test_rubric_boundaries_that_pass(ws: Path, fields: dict[str, Any]) -> None:
    cfg, store = setup(ws)
    assert asking(cfg, store, "Unsure which way to go", **fields).record is not None
    assert len(files(ws)) == 1


def test_the_same_key_returns_the_open_request(ws: Path) -> None:
    cfg, store = setup(ws)
    first = asking(cfg, store, "Which flow?", key="flow-q")
    second = asking(cfg, store, "Which flow?", key="flow-q")
    assert first.record is not None and second.record is not None
    assert second.existing and not first.existing
    assert second.record.request_id == first.record.request_id and len(files(ws)) == 1


def test_the_same_key_with_block_writes_one_request_and_one_block(ws: Path) -> None:
    cfg, store = setup(ws)
    first = asking(cfg, store, "Which flow?", key="flow-q", block=True)
    second = asking(cfg, store, "Which flow?", key="flow-q", block=True)
    assert first.record is not None and second.record is not None
    assert second.existing and second.record.request_id == first.record.request_id
    assert len(files(ws)) == 1
    assert (ws / "BLOCKED.md").read_text().count(marker(first.record.request_id)) == 1


def test_block_writes_blocked_md(ws: Path) -> None:
    cfg, store = setup(ws)
    asked = asking(cfg, store, "Which flow?", options=("Flow A", "Flow B"), block=True)
    assert asked.record is not None and asked.joined is None
    text = (ws / "BLOCKED.md").read_text()
    assert marker(asked.record.request_id) in text and "Which flow?" in text
    assert "Flow A" in text and "Flow B" in text
    record = store.load(asked.record.request_id)
    assert record.status == "open" and record.block == "raised"


def test_asking_again_with_block_raises_a_question_asked_without(ws: Path) -> None:
    cfg, store = setup(ws)
    first = asking(cfg, store, "Which currency?", key="currency")
    assert first.record is not None and not (ws / "BLOCKED.md").exists()
    raised = asking(cfg, store, "Which currency?", key="currency", block=True)
    assert raised.record is not None and raised.record.request_id == first.record.request_id
    assert len(files(ws)) == 1 and store.load(first.record.request_id).block == "raised"
    text = (ws / "BLOCKED.md").read_text()
    assert marker(first.record.request_id) in text
    again = asking(cfg, store, "Which currency?", key="currency", block=True)
    assert again.existing and len(files(ws)) == 1
    assert (ws / "BLOCKED.md").read_text() == text  # once raised, asking again changes nothing


def test_a_question_asked_while_blocked_joins_and_keeps_its_own_request(ws: Path) -> None:
    cfg, store = setup(ws)
    block = Escalator(cfg, store=store).escalate(
        Escalation(
            question="Which flow?",
            context="checkout",
            attempted=["read PROMPT.md"],
            choices=[parse_choice("Flow A — old API")],
        )
    )
    first = asking(cfg, store, "Which currency?", key="currency", block=True)
    assert first.record is not None and first.joined == block.request.request_id
    assert first.record.block == "joined"
    assert first.record.joined_to == block.request.request_id
    again = asking(cfg, store, "Which currency?", key="currency", block=True)
    assert again.record is not None and again.record.request_id == first.record.request_id
    assert len(store.load(block.request.request_id).joined) == 1
    assert marker(first.record.request_id) not in (ws / "BLOCKED.md").read_text()
    (ws / "BLOCKED.md").unlink()  # the open block goes: asking again raises it as its own
    raised = asking(cfg, store, "Which currency?", key="currency", block=True)
    assert raised.record is not None and raised.record.request_id == first.record.request_id
    assert marker(first.record.request_id) in (ws / "BLOCKED.md").read_text()


@pytest.mark.parametrize(
    ("kind", "labels"),
    [("approval", ["Approve", "Reject", "Request changes"]),
     ("review", ["Approve", "Request changes", "Defer"])],
)  # fmt: skip
def test_approvals_and_reviews_get_fixed_options_and_always_ask(
    ws: Path, kind: str, labels: list[str]
) -> None:
    cfg, store = setup(ws)
    asked = asking(cfg, store, "Rename a helper", kind=kind, confidence=0.99, prompt="Ship it?")
    assert asked.needs_human and asked.record is not None
    record = store.load(asked.record.request_id)
    assert record.kind == kind and [o.label for o in record.options] == labels


def test_option_with_kind_approval_is_a_usage_error(ws: Path) -> None:
    cfg, store = setup(ws)
    with pytest.raises(UsageError, match="--option does not go with --kind approval"):
        asking(cfg, store, "Deploy?", kind="approval", prompt="Deploy?", options=("Yes",))
    assert not (ws / "requests").exists()


@pytest.mark.parametrize(
    ("fields", "error", "text"),
    [
        ({"kind": "poll"}, UsageError, "--kind"),
        ({"request_id": "../x"}, BadInput, "is not allowed"),
        ({"confidence": 1.5}, UsageError, "confidence"),
        ({"options": ("A=",)}, BadInput, "empty value"),
        ({"options": ("A", "B"), "recommend": "c"}, BadInput, "--recommend"),
    ],
)
def test_bad_input_is_refused_before_anything_is_written(
    ws: Path, fields: dict[str, Any], error: type[Exception], text: str
) -> None:
    cfg, store = setup(ws)
    with pytest.raises(error, match=text):
        asking(cfg, store, "Which flow?", **fields)
    with pytest.raises(BadInput, match="situation is empty"):
        asking(cfg, store, "   ")
    assert not (ws / "requests").exists()


def test_a_timeout_past_a_year_is_refused_before_anything_is_written(ws: Path) -> None:
    """SPEC §28's class: ``--timeout 1e10`` made a record loopkit could not read back, its
    block standing with no question."""
    cfg, store = setup(ws)
    with pytest.raises(UsageError, match="at most a year"):
        asking(cfg, store, "Rename a helper.", confidence=0.2, timeout_minutes=1e10, block=True)
    assert not (ws / "BLOCKED.md").exists() and not list(ws.glob("requests/*.json"))
    fine = asking(cfg, store, "Rename a helper.", prompt="Rename it?", confidence=0.2,
                  timeout_minutes=527040)  # fmt: skip
    assert fine.record is not None and fine.record.timeout_default["after_minutes"] == 527040
