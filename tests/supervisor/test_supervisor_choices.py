"""The supervisor's own choices: Skip only when there is a task to skip; their values and
aliases stay the same whatever letters they get (SPEC section 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit import config
from loopkit.answering import answer
from loopkit.escalation.escalator import Escalator
from loopkit.requests.store import RequestStore
from loopkit.supervisor import triggers


def test_skip_is_offered_only_with_a_task() -> None:
    with_task = triggers.verify_failures(task="add prices", failures=3, command="pytest",
                                         last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    assert [c.value for c in with_task.choices] == ["retry", "skip", "abort"]
    without = triggers.verify_failures(task=None, failures=3, command="pytest",
                                       last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    assert [c.label for c in without.choices] == ["Retry with a hint", "Abort the loop"]
    missing = triggers.missing_env(names=["KEY"], task=None, iteration=1, pid=1)
    assert [c.value for c in missing.choices] == ["retry", "abort"]


def raised(ws: Path, task: str | None) -> tuple[RequestStore, str]:
    """The supervisor's verify-failures block, escalated and recorded as the loop does."""
    asked = triggers.verify_failures(task=task, failures=3, command="pytest",
                                     last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    escalator = Escalator(config.load(ws, {"LOOPKIT_HITL_CHANNEL": "none"}))
    return escalator.store, escalator.escalate(asked).request.request_id


@pytest.mark.parametrize("task", ["add prices", None], ids=["with-a-task", "no-task"])
@pytest.mark.parametrize(
    ("reply", "value"),
    [("stop", "abort"), ("Quit", "abort"), ("cancel", "abort"), ("halt!", "abort"),
     ("again", "retry"), ("try again", "retry"), ("stop, I'll fix it by hand", "abort")],
)  # fmt: skip
def test_the_supervisors_words_are_read_whatever_letters_the_choices_get(
    ws: Path, task: str | None, reply: str, value: str
) -> None:
    store, request_id = raised(ws, task)
    options = json.loads(store.path(request_id).read_text())["options"]
    assert {o["value"]: o.get("aliases") for o in options}["abort"] == [
        "stop", "quit", "cancel", "halt"]  # fmt: skip
    decision = answer(store, request_id, reply, by="ana", via="cli").decision
    assert decision["chosen_option"] == value


@pytest.mark.parametrize(("task", "value"), [("add prices", "skip"), (None, None)])
def test_skips_words_are_free_text_where_there_is_no_task_to_skip(
    ws: Path, task: str | None, value: str | None
) -> None:
    store, request_id = raised(ws, task)
    decision = answer(store, request_id, "next", by="ana", via="cli").decision
    assert decision["chosen_option"] == value
    assert [o.value for o in store.load(request_id).options][-1] == "abort"
