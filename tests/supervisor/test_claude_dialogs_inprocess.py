"""Claude's own dialogs under the supervisor (``can_use_tool``, SPEC section 23), in process:
asked of the human without holding the turn, answered once, never allowed on a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeClock, FakeRunner, loop_config, supervisor

from loopkit.requests.answer import apply_reply
from loopkit.requests.store import RequestStore
from loopkit.supervisor.dialogs import WAITING, Dialogs

pytestmark = pytest.mark.usefixtures("no_subprocesses")

RULE = {"type": "addRules", "behavior": "allow", "destination": "localSettings",
        "rules": [{"toolName": "Bash", "ruleContent": "npm publish"}]}  # fmt: skip
CALL = {"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": "t1",
        "input": {"command": "npm publish", "description": "ship it"},
        "permission_suggestions": [RULE]}  # fmt: skip


def answer(store: RequestStore, request_id: str, reply: str, *, by: str, via: str) -> None:
    """A human's answer, recorded as every surface records it."""
    store.update(request_id, lambda r: apply_reply(r, reply, by=by, via=via))


def dialogs(ws: Path) -> tuple[Dialogs, object]:
    sup = supervisor(loop_config(ws), FakeClock(), FakeRunner(FakeClock(), {}))
    return Dialogs(sup.parts.escalator, str(ws)), sup


def test_a_permission_dialog_is_asked_the_turn_stops_and_the_answer_allows_once(ws: Path) -> None:
    ask, sup = dialogs(ws)
    first = ask.can_use_tool(CALL, "s-1")
    assert first == {"behavior": "deny", "message": WAITING, "interrupt": True}
    (request_id,) = ask.asked
    record = sup.parts.store.load(request_id)  # type: ignore[attr-defined]
    assert record.kind == "approval" and record.raised_by == "agent"
    assert record.gate["session"] == "s-1" and record.gate["command"] == "npm publish"
    assert [o.label for o in record.options] == ["Allow", "Deny", "Always allow"]
    assert (ws / "BLOCKED.md").exists()  # the loop's block

    answer(sup.parts.store, request_id, "C", by="ana", via="cli")  # type: ignore[attr-defined]
    reworded = {**CALL, "input": {"command": "npm publish", "description": "release"}}
    allowed = ask.can_use_tool(reworded, "s-1")
    assert allowed["behavior"] == "allow"
    assert allowed["updatedInput"] == reworded["input"]
    assert allowed["updatedPermissions"] == CALL["permission_suggestions"]
    again = ask.can_use_tool(CALL, "s-1")  # used once: asked anew
    assert again["behavior"] == "deny" and again.get("interrupt")


def test_a_denial_carries_the_humans_words_and_does_not_stop_the_turn(ws: Path) -> None:
    ask, sup = dialogs(ws)
    ask.can_use_tool(CALL, "s-1")
    answer(sup.parts.store, ask.asked[0], "B, not before the tests pass", by="ana", via="cli")  # type: ignore[attr-defined]
    denied = ask.can_use_tool(CALL, "s-1")
    assert denied["behavior"] == "deny" and "not before the tests pass" in denied["message"]
    assert "interrupt" not in denied


def test_claudes_question_is_asked_and_its_answer_given_when_asked_again(ws: Path) -> None:
    ask, sup = dialogs(ws)
    options = [{"label": "SQLite"}, {"label": "Postgres"}]
    question = {"questions": [{"question": "Which database?", "header": "DB",
                               "multiSelect": False, "options": options}]}  # fmt: skip
    call = {"subtype": "can_use_tool", "tool_name": "AskUserQuestion", "input": question}
    assert ask.can_use_tool(call, "s-1") == {"behavior": "deny", "message": WAITING,
                                              "interrupt": True}  # fmt: skip
    answer(sup.parts.store, ask.asked[0], "B", by="ana", via="cli")  # type: ignore[attr-defined]
    allowed = ask.can_use_tool(call, "s-1")
    answers = {"Which database?": "Postgres"}
    assert allowed == {"behavior": "allow", "updatedInput": {**question, "answers": answers}}


def test_a_dialog_that_cannot_be_asked_allows_nothing(ws: Path) -> None:
    ask, _ = dialogs(ws)
    (ws / "BLOCKED.md").mkdir()  # something in the way of the block
    refused = ask.can_use_tool(CALL, "s-1")
    assert refused["behavior"] == "deny" and refused.get("interrupt")
    assert ask.can_use_tool({"tool_name": 7}, None)["behavior"] == "deny"
