"""Only a human lifts a block (SPEC section 28), in process on a fake runner and clock.

- A ``BLOCKED.md`` removed or moved while the agent runs is no unblock: its request stays
  open, the file is written again, and the loop is blocked when the turn ends (before:
  ``loopkit escalate …; rm -f BLOCKED.md`` recorded "resolved by human").
- A marker naming a request that cannot be read, was never raised as a block, or was acted
  on already, and a ``BLOCKED.md`` that is a symbolic link, a FIFO or a folder, are asked as
  the agent's block — sent — never waited on as a human's quiet pause (before: 14/14 were).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fakes import Call, FakeClock, FakeRunner, RecordingChannel, Run, loop_config, supervisor

from loopkit.answering import answer
from loopkit.errors import EXIT_BLOCKED, EXIT_SIGTERM
from loopkit.escalation import blockfile
from loopkit.escalation.ask import Question, ask
from loopkit.escalation.blockfile import Escalation
from loopkit.escalation.escalator import Escalator
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


def _escalate(ws: Path, config: object) -> str:
    """``loopkit escalate`` from inside the agent's session."""
    store = RequestStore(Workspace.of(config))  # type: ignore[arg-type]
    escalator = Escalator(config, store=store, agent_session=True, commit=lambda ws: None)  # type: ignore[arg-type]
    return escalator.escalate(QUESTION).request.request_id


def _gone(how: str, ws: Path) -> None:
    """What the agent does to its own BLOCKED.md."""
    path = ws / "BLOCKED.md"
    if how == "rm":
        path.unlink()
    elif how == "mv out":
        path.rename(ws.parent / "taken.md")
    elif how == "mv in":
        path.rename(ws / "old-block.md")
    elif how == "folder":
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("how", ["rm", "mv out", "mv in"])
@pytest.mark.parametrize("takes", [0.0, 30.0])
def test_a_block_the_agent_removes_in_its_turn_stands(ws: Path, how: str, takes: float) -> None:
    clock = FakeClock()
    phone = RecordingChannel()
    config = loop_config(ws, ladder=("telegram",))
    asked: list[str] = []

    def escalate_then_remove(call: Call) -> None:
        asked.append(_escalate(ws, config))
        _gone(how, ws)

    runner = FakeRunner(clock, {"agent": Run(takes=takes, does=escalate_then_remove),
                                "verify": Run()})  # fmt: skip
    sup = supervisor(config, clock, runner, channel=phone, exit_on_block=True, max_iterations=1)

    assert sup.run() == EXIT_BLOCKED
    assert runner.names() == ["agent"]  # verify skipped: the agent blocked
    record: Request = sup.parts.store.load(asked[0])
    assert record.is_open and record.resolution is None  # never "resolved by human"
    assert blockfile.request_id_of(ws / "BLOCKED.md") == asked[0]  # written again
    assert [m.request_id for m in phone.sent] == asked  # asked, once
    assert sup.parts.state.open_request == asked[0]


def test_a_block_replaced_by_a_folder_stands_on_its_request(ws: Path) -> None:
    clock = FakeClock()
    phone = RecordingChannel()
    config = loop_config(ws, ladder=("telegram",))
    asked: list[str] = []

    def escalate_then_hide(call: Call) -> None:
        asked.append(_escalate(ws, config))
        _gone("folder", ws)

    runner = FakeRunner(clock, {"agent": Run(does=escalate_then_hide), "verify": Run()})
    sup = supervisor(config, clock, runner, channel=phone)
    clock.at(600, sup.request_stop)
    assert sup.run() == EXIT_SIGTERM
    assert sup.parts.store.load(asked[0]).is_open
    assert sup.parts.state.open_request == asked[0]
    assert [m.request_id for m in phone.sent] == asked  # the question stands: no second one


def test_an_answer_in_the_turn_is_not_undone(ws: Path) -> None:
    """A human's answer during the agent's turn (the relay removes BLOCKED.md) still lifts
    the block: nothing is written again."""
    clock = FakeClock()
    config = loop_config(ws, ladder=("none",))
    asked: list[str] = []

    def escalate(call: Call) -> None:
        asked.append(_escalate(ws, config))

    runner = FakeRunner(clock, {"agent": [Run(takes=120, does=escalate), Run()],
                                "verify": Run()})  # fmt: skip
    sup = supervisor(config, clock, runner, max_iterations=2)

    def tap() -> None:
        answered = answer(sup.parts.store, asked[0], "A", by="ana", via="telegram")
        blockfile.remove_block(ws / "BLOCKED.md", answered.record)
        sup.parts.wake.set()

    clock.at(60, tap)
    sup.run()
    assert not (ws / "BLOCKED.md").exists()
    assert sup.parts.store.load(asked[0]).status == "resolved"
    assert runner.names() == ["agent", "agent", "verify"]


# --- markers that name no block, and things that are not files ---------------------------


def _unreadable(ws: Path, store: RequestStore) -> str:
    (ws / "requests").mkdir(exist_ok=True)
    (ws / "requests" / "broken0001.json").write_text("{ not json")
    return "broken0001"


def _never_raised(ws: Path, store: RequestStore) -> str:
    config = loop_config(ws)
    made = ask(config, Question(situation="Rename a helper", prompt="Rename it?",
                                kind="approval", confidence=0.2), store=store)  # fmt: skip
    assert made.record is not None and made.record.block == "none"
    return made.record.request_id


def _acted_on(ws: Path, store: RequestStore) -> str:
    config = loop_config(ws)
    escalator = Escalator(config, store=store, commit=lambda ws: None)
    record = escalator.escalate(QUESTION).request
    answer(store, record.request_id, "A", by="ana", via="cli")  # (its block lifted with it)
    (ws / "BLOCKED.md").unlink(missing_ok=True)

    def applied(fresh: Request) -> bool:
        fresh.applied_at = "2026-01-01T00:00:00Z"
        return True

    store.update(record.request_id, applied)
    return record.request_id


@pytest.mark.parametrize("names", [_unreadable, _never_raised, _acted_on])
def test_a_marker_that_names_no_block_is_asked_as_the_agents(ws: Path, names: object) -> None:
    clock = FakeClock()
    phone = RecordingChannel()
    config = loop_config(ws, ladder=("telegram",))
    store = RequestStore(Workspace.of(config))
    marked = names(ws, store)  # type: ignore[operator]

    def write_block(call: Call) -> None:
        (ws / "BLOCKED.md").write_text(
            f"# Blocked\n<!-- loopkit request: {marked} -->\n\n## Question:\nShip it?\n"
        )

    runner = FakeRunner(clock, {"agent": Run(does=write_block), "verify": Run()})
    sup = supervisor(config, clock, runner, channel=phone, exit_on_block=True, max_iterations=1)
    assert sup.run() == EXIT_BLOCKED
    [sent] = phone.sent
    assert sent.request_id != marked
    record = sup.parts.store.load(sent.request_id)
    assert record.is_open and record.block == "adopted" and record.prompt == "Ship it?"
    assert blockfile.request_id_of(ws / "BLOCKED.md") == sent.request_id  # the marker, claimed
    assert "## Question:\nShip it?" in (ws / "BLOCKED.md").read_text()  # the agent's text kept


def _odd(kind: str, ws: Path) -> None:
    path = ws / "BLOCKED.md"
    if kind == "symlink":
        (ws.parent / "elsewhere.md").write_text("## Question:\nIs SECRET-7731 it?\n")
        path.symlink_to(ws.parent / "elsewhere.md")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
        (path / "inside.txt").write_text("kept\n")


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_something_other_than_a_file_is_asked_and_moved_aside_once_answered(
    ws: Path, kind: str
) -> None:
    clock = FakeClock()
    phone = RecordingChannel()
    config = loop_config(ws, ladder=("telegram",))
    runner = FakeRunner(clock, {"agent": [Run(does=lambda call: _odd(kind, ws)), Run()],
                                "verify": Run()})  # fmt: skip
    sup = supervisor(config, clock, runner, channel=phone, max_iterations=2)

    def reply() -> None:
        [sent] = phone.sent
        answer(sup.parts.store, sent.request_id, "retry", by="ana", via="cli")
        sup.parts.wake.set()

    clock.at(300, reply)
    clock.at(4000, sup.request_stop)
    sup.run()
    [sent] = phone.sent  # asked, once
    assert "not a file" in sent.text and "SECRET-7731" not in sent.text
    assert sup.parts.store.load(sent.request_id).status == "resolved"
    assert not os.path.lexists(ws / "BLOCKED.md")  # moved aside: the loop went on
    [aside] = (ws / ".loopkit" / "in-the-way").iterdir()
    assert aside.name.startswith("BLOCKED.md.")
    if kind == "folder":
        assert (aside / "inside.txt").read_text() == "kept\n"
    assert runner.names() == ["agent", "agent", "verify"]
    if kind == "symlink":
        assert (ws.parent / "elsewhere.md").exists()  # never followed
    shutil.rmtree(ws / ".loopkit" / "in-the-way")
