"""A decision reaches only the run it answers (SPEC section 16), in process on a fake runner
and clock: an answer to a request no supervisor raised — a Claude Code hook's approval asked
outside ``run``, an ``ask`` without ``--block`` — is never handed to the next agent run; when
several decisions are pending for one run, the agent gets all of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.config import Config
from loopkit.errors import EXIT_OK
from loopkit.escalation import gate
from loopkit.escalation.ask import Question, ask
from loopkit.escalation.blockfile import Escalation
from loopkit.escalation.escalator import Escalator
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace
from loopkit.workspace.state import State

pytestmark = pytest.mark.usefixtures("no_subprocesses")

DIGEST = "9f2c" * 16  # the hook's SHA-256 of tool name + input + folder


def escalator(
    config: Config, *, agent_session: bool, store: RequestStore | None = None
) -> Escalator:
    store = store or RequestStore(Workspace.of(config))
    return Escalator(config, store=store, agent_session=agent_session, commit=lambda ws: None)


def hook_approval(config: Config, *, agent_session: bool) -> Request:
    """What ``loopkit hook claude pretooluse`` raises for a gated call (hooks/approve.py)."""

    def make() -> Request:
        return gate.approval_request(
            config,
            key=f"hook:{DIGEST}",
            prompt="Approve Claude's `rm -rf build`?",
            situation="Command: rm -rf build\nFolder: /srv/shop\nTool: Bash (rule rm -rf)",
            policy="loopkit's Claude Code hook: this exact tool call runs only after its approval",
            trigger="claude-hook",
            attempted="nothing: Claude Code holds the call until it is approved",
            binding={"argv": ["rm", "-rf", "build"], "cwd": "/srv/shop", "sha256": DIGEST},
        )

    return gate.approval(
        f"hook:{DIGEST}", make, escalator=escalator(config, agent_session=agent_session)
    )


def approve_as_the_hook_does(config: Config, record: Request) -> None:
    """The human approves from the phone (the answer lifts BLOCKED.md); the hook, waiting
    outside any supervisor, takes its approval."""
    store = RequestStore(Workspace.of(config))
    answer(store, record.request_id, "approve", by="ana", via="telegram")
    assert not (config.workspace / "BLOCKED.md").exists()
    assert gate.consume(store, store.load(record.request_id), DIGEST).state == "approved"


def decisions_seen(runner: FakeRunner) -> list[str | None]:
    return [c.env.get("LOOPKIT_DECISION") for c in runner.calls if c.name == "agent"]


def last_decision(ws: Path) -> dict[str, Any]:
    data = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
    assert isinstance(data, dict)
    return data


def test_a_hook_approval_given_while_no_supervisor_ran_is_not_the_next_runs(ws: Path) -> None:
    config = loop_config(ws)
    record = hook_approval(config, agent_session=False)  # interactive Claude Code, no `run`
    approve_as_the_hook_does(config, record)
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(config, clock, runner, max_iterations=1)

    assert sup.run() == EXIT_OK
    assert decisions_seen(runner) == [None]  # the approval was the hook's, not this run's
    assert not (ws / ".loopkit" / "last_decision.json").exists()
    assert sup.parts.store.load(record.request_id).applied_at is not None  # looked at, once


def test_a_hook_approval_asked_outside_the_loop_while_it_waits_is_not_handed_on(
    ws: Path,
) -> None:
    config = loop_config(ws)
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(config, clock, runner, max_iterations=1)
    # The human's interactive Claude Code session, in the same folder, asks while the loop runs.
    record = hook_approval(config, agent_session=False)
    sup.parts.state.status, sup.parts.state.open_request = "blocked", record.request_id
    sup.parts.save()
    clock.at(60, lambda: (approve_as_the_hook_does(config, record), sup.parts.wake.set()))

    assert sup.run() == EXIT_OK
    assert decisions_seen(runner) == [None]


def test_the_agents_own_hook_approval_reaches_its_next_run(ws: Path) -> None:
    config = loop_config(ws)
    record = hook_approval(config, agent_session=True)  # Claude Code run by `loopkit run`
    assert record.raised_by == "agent"
    approve_as_the_hook_does(config, record)
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(config, clock, runner, max_iterations=1)

    assert sup.run() == EXIT_OK
    assert decisions_seen(runner) == ["approved"]


def test_an_ask_without_block_is_never_handed_to_a_run(ws: Path) -> None:
    config = loop_config(ws)
    store = RequestStore(Workspace.of(config))
    question = Question(situation="Cents or Decimal? Both fit.", prompt="Cents or Decimal?",
                        options=("Cents", "Decimal"), key="price-type")  # fmt: skip
    agents = escalator(config, agent_session=True, store=store)
    asked = ask(config, question, store=store, escalator=agents)
    assert asked.record is not None and asked.record.block == "none"
    answer(store, asked.record.request_id, "B", by="ana", via="cli")
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": Run()})
    sup = supervisor(config, clock, runner, max_iterations=1)

    assert sup.run() == EXIT_OK
    assert decisions_seen(runner) == [None]


def test_every_decision_pending_for_a_run_reaches_it(ws: Path) -> None:
    """The agent asks twice in one turn (the second question joins the first's block); both
    are answered before its next run, which gets both: the latest as LOOPKIT_DECISION."""
    config = loop_config(ws)
    clock = FakeClock()
    asked: list[str] = []

    def ask_twice(call: Call) -> None:
        agents = escalator(config, agent_session=True)
        first = agents.escalate(
            Escalation.of_texts(
                "Which payment flow?", "checkout", ["read PROMPT.md"], ["Flow A", "Flow B"]
            )
        )
        second = ask(config, Question(situation="Cents or Decimal?", prompt="Cents or Decimal?",
                                      options=("Cents", "Decimal"), block=True),
                     store=agents.store, escalator=agents)  # fmt: skip
        assert second.joined == first.request.request_id and second.record is not None
        asked.extend([first.request.request_id, second.record.request_id])

    runner = FakeRunner(clock, {"agent": [Run(does=ask_twice), Run()], "verify": Run()})
    sup = supervisor(config, clock, runner, max_iterations=2)

    def reply(index: int, text: str) -> None:
        answer(sup.parts.store, asked[index], text, by="ana", via="cli")
        sup.parts.wake.set()

    clock.at(60, lambda: reply(0, "B"))  # the second question is asked when the first goes
    clock.at(120, lambda: reply(1, "Cents, as the ledger does"))
    assert sup.run() == EXIT_OK
    agents = [c for c in runner.calls if c.name == "agent"]
    assert [c.at for c in agents] == [0, 120]
    # A label, then words: that option, the words kept as its note (SPEC sections 9 and 16).
    assert agents[1].env["LOOPKIT_DECISION"] == "cents"
    assert agents[1].env["LOOPKIT_DECISION_NOTE"] == "as the ledger does"
    assert agents[1].env["LOOPKIT_DECISION_REQUEST"] == asked[1]
    last = last_decision(ws)
    assert last["request_id"] == asked[1]  # the latest, as before
    assert [(d["request_id"], d["parsed_decision"]) for d in last["decisions"]] == [
        (asked[0], "flow-b"), (asked[1], "cents")]  # fmt: skip


def test_a_decision_consumed_by_one_run_is_not_listed_for_the_next(ws: Path) -> None:
    config = loop_config(ws, max_verify_failures=1, escalation={"timeout_minutes": 600})
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": Run(), "verify": [Run(1), Run(1), Run(0)]})
    sup = supervisor(config, clock, runner, max_iterations=3)
    answered: list[str] = []

    def reply() -> None:
        request_id = sup.parts.state.open_request
        assert request_id is not None
        answered.append(request_id)
        answer(sup.parts.store, request_id, f"hint {len(answered)}", by="ana", via="cli")
        sup.parts.wake.set()

    clock.at(100, reply)
    clock.at(300, reply)
    assert sup.run() == EXIT_OK
    assert decisions_seen(runner) == [None, "hint 1", "hint 2"]
    assert [d["parsed_decision"] for d in last_decision(ws)["decisions"]] == ["hint 2"]


def test_a_pending_decision_saved_by_an_older_supervisor_is_kept() -> None:
    old = {"status": "blocked", "pending_decision": {"request_id": "r1", "parsed_decision": "B"}}
    state = State.from_dict(old)
    assert state.pending_decisions == [{"request_id": "r1", "parsed_decision": "B"}]
    assert "pending_decision" not in state.to_dict()
    assert State.from_dict({"pending_decision": None}).pending_decisions == []
