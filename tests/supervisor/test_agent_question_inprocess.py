"""The agent's question reaches the phone at once (SPEC section 16), in process on a fake
runner and clock: the agent's ``escalate`` runs inside its session, without the channel
secrets, so it leaves the send to the supervisor and records no attempt; the supervisor sends
it while the agent still runs — or, when the agent's turn ended first, before it waits or
exits (``--exit-on-block``, as ``run.sh`` runs it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fakes import Call, FakeClock, FakeRunner, RecordingChannel, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.channels import Outcome
from loopkit.config import Config
from loopkit.errors import EXIT_BLOCKED, EXIT_OK, EXIT_SIGTERM
from loopkit.escalation.blockfile import Escalation, remove_block
from loopkit.escalation.escalator import Escalator
from loopkit.message import Note
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

pytestmark = pytest.mark.usefixtures("no_subprocesses")

QUESTION = Escalation.of_texts(
    "Which payment flow should checkout use?",
    "Feature: checkout. File: app/pay.py.",
    ["read PROMPT.md: it names both"],
    ["Flow A — keeps the API", "Flow B — needs a migration"],
)


@dataclass
class Phone(RecordingChannel):
    """A channel that delivers every message and notes the fake time it was sent at."""

    clock: FakeClock = field(default_factory=FakeClock)
    at: list[float] = field(default_factory=list)

    def send(self, message: Note) -> Outcome:
        self.at.append(self.clock.elapsed)
        return super().send(message)


def agents_escalate(config: Config, asked: list[str]) -> Run:
    """An agent that runs ``loopkit escalate`` at its start (its process inside the session,
    as the command line builds it there: ``App.escalator``) and then goes on with its turn."""

    def escalate(call: Call) -> None:
        store = RequestStore(Workspace.of(config))
        escalator = Escalator(config, store=store, agent_session=True, commit=lambda ws: None)
        asked.append(escalator.escalate(QUESTION).request.request_id)

    return Run(takes=600, does=escalate)


def the_record(sup: object, request_id: str) -> Request:
    return sup.parts.store.load(request_id)  # type: ignore[attr-defined, no-any-return]


def test_the_agents_question_is_sent_while_the_agent_still_runs(ws: Path) -> None:
    clock = FakeClock()
    phone = Phone(clock=clock)
    config = loop_config(ws, ladder=("telegram",))
    asked: list[str] = []
    runner = FakeRunner(clock, {"agent": agents_escalate(config, asked), "verify": Run()})
    sup = supervisor(config, clock, runner, channel=phone)
    clock.at(4000, sup.request_stop)  # an hour after: nobody answered

    assert sup.run() == EXIT_SIGTERM
    assert runner.names() == ["agent"]  # verify skipped: the agent blocked
    assert phone.at == [0]  # on the phone at once, with the agent's 600 s turn still to go
    record = the_record(sup, asked[0])
    assert record.raised_by == "agent"
    # No failed attempt, and no second message while the loop waited.
    assert [(e.channel, e.ok) for e in record.delivery] == [("telegram", True)]


@pytest.mark.parametrize("takes", [0.0, 2.0])
def test_an_agent_that_ends_its_turn_at_once_is_sent_before_exit_on_block(
    ws: Path, takes: float
) -> None:
    clock = FakeClock()
    phone = Phone(clock=clock)
    config = loop_config(ws, ladder=("telegram",))
    asked: list[str] = []
    agent = agents_escalate(config, asked)
    runner = FakeRunner(clock, {"agent": Run(takes=takes, does=agent.does), "verify": Run()})
    sup = supervisor(config, clock, runner, channel=phone, exit_on_block=True)

    assert sup.run() == EXIT_BLOCKED
    assert [m.request_id for m in phone.sent] == asked
    record = the_record(sup, asked[0])
    assert [(e.channel, e.ok) for e in record.delivery] == [("telegram", True)]


def test_an_answer_from_the_phone_during_the_agents_turn_reaches_its_next_run(
    ws: Path,
) -> None:
    """On the phone at once, the question may be answered before the agent's turn ends: the
    relay records the answer and removes BLOCKED.md meanwhile. The supervisor still treats
    the turn as blocked (no verify) and hands the answer to the next agent run."""
    clock = FakeClock()
    phone = Phone(clock=clock)
    config = loop_config(ws, ladder=("telegram",))
    asked: list[str] = []
    agent = [agents_escalate(config, asked), Run()]
    runner = FakeRunner(clock, {"agent": agent, "verify": Run()})
    sup = supervisor(config, clock, runner, channel=phone, max_iterations=2)

    def tap_b() -> None:  # what the Telegram relay does with a tap on B
        store = RequestStore(Workspace.of(config))
        answered = answer(store, asked[0], "B", by="111 (Ana)", via="telegram")
        remove_block(ws / "BLOCKED.md", answered.record)
        sup.parts.wake.set()

    clock.at(60, tap_b)
    assert sup.run() == EXIT_OK
    assert runner.names() == ["agent", "agent", "verify"]  # the asking turn is not verified
    second = [c for c in runner.calls if c.name == "agent"][1]
    assert (second.env["LOOPKIT_DECISION"], second.env["LOOPKIT_DECISION_REQUEST"]) == (
        "flow-b", asked[0])  # fmt: skip
    assert the_record(sup, asked[0]).applied_at is not None
