"""The ladder of people under a supervisor, in process, on a fake clock (SPEC §29): nobody
sleeps twenty minutes. The pushes go to the fake ntfy server on 127.0.0.1 (real HTTP); the
answer comes from another process's answering service — as a tap through ``loopkit serve``
does — and the supervisor, seeing it, tells the others."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeClock, FakeRunner, loop_config

from loopkit.answering.service import Answered, Answering
from loopkit.answering.who import Answerer, Tap
from loopkit.config import ChannelSettings, Config
from loopkit.config.people import Person, Quiet
from loopkit.datarecord import replace
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.requests.locate import Stores
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore
from loopkit.supervisor import triggers
from loopkit.supervisor.loop import Options, Supervisor
from loopkit.supervisor.parts import CONTINUE
from loopkit.watch.folder import FolderWatch

from fakentfy import FakeNtfy

pytestmark = pytest.mark.usefixtures("no_subprocesses")

TASK = "prices in cents"
INBOX = "http://laptop.vpn:8765"


class Team:
    """A supervisor blocked on its own question, its people Ana (at once) and Ben (after
    20 minutes), both on ntfy."""

    def __init__(
        self, ws: Path, ntfy: FakeNtfy, *people: Person, wall: datetime | None = None
    ) -> None:
        self.ws, self.ntfy = ws, ntfy
        self.clock = FakeClock(wall=wall)
        (ws / "PLAN.md").write_text(f"- [ ] {TASK}\n- [ ] totals\n")
        base = loop_config(ws, task_file="PLAN.md", escalation={"timeout_minutes": 600.0})
        self.config: Config = replace(
            base,
            escalation=replace(base.escalation, people=people),
            channels=ChannelSettings(inbox_url=INBOX),
        )
        clock = self.clock

        def escalator(config: Config, *, store: RequestStore) -> Escalator:
            return Escalator(config, store=store, commit=lambda ws: None, clock=clock)

        self.sup = Supervisor(
            self.config,
            options=Options(install_signals=False),
            runner=FakeRunner(self.clock, {}),
            escalator=escalator,
            clock=self.clock,
        )
        parts = self.sup.parts
        parts.state.task, parts.state.failures = TASK, 3
        failed = [{"iteration": n, "reason": "verify exit 1", "signature": "FAILED"}
                  for n in (1, 2, 3)]  # fmt: skip
        asked = triggers.verify_failures(
            task=TASK, failures=3, command="pytest", last_output="FAILED", failed=failed,
            iteration=3,
        )  # fmt: skip
        self.request_id = parts.escalator.escalate(asked).request.request_id
        parts.state.status, parts.state.open_request = "blocked", self.request_id
        parts.save()

    def record(self) -> Request:
        return self.sup.parts.store.load(self.request_id)

    def tap(self, person: str, letter: str) -> Answered:
        """``person`` taps a button: answered in *another* process's service (serve's)."""
        store, stores = RequestStore(self.sup.parts.workspace), Stores()
        stores.add(self.config, store)  # its workspace as serve reads it: the same people
        other = Answering(stores=stores, hubs=Hubs(), here=store)
        done = other.answer(self.request_id, letter,
                            Answerer(by=person, via="ntfy", origin=Tap(person, None, None)),
                            confirmed=False)  # fmt: skip
        assert isinstance(done, Answered)
        self.sup.parts.wake.set()
        return done

    def run(self) -> Any:
        parts = self.sup.parts
        with FolderWatch([parts.workspace.root, parts.workspace.requests_dir], parts.wake) as w:
            parts.watch = w
            try:
                return self.sup.blocked.run(resend=False)
            finally:
                parts.watch = None


def ana(ntfy: FakeNtfy, **more: Any) -> Person:
    return Person("Ana", "ntfy", ntfy.topic_url("ana"), 0.0, **more)


def ben(ntfy: FakeNtfy) -> Person:
    return Person("Ben", "ntfy", ntfy.topic_url("ben"), 1200.0)


def test_ben_is_asked_when_his_after_passes_answers_and_ana_is_told(
    ws: Path, ntfy: FakeNtfy
) -> None:
    team = Team(ws, ntfy, ana(ntfy), ben(ntfy))
    [first] = ntfy.wait_for("ana")
    assert "(also asked" not in first.message["message"]
    assert ntfy.messages("ben") == []
    team.clock.at(1300, lambda: team.tap("Ben", "B"))
    assert team.run() == CONTINUE
    [asked] = ntfy.messages("ben")
    assert "(also asked: Ana)" in asked.message["message"]
    record = team.record()
    ben_sent = next(e for e in record.delivery if e.person == "Ben" and e.is_send)
    assert record.delivery[0].person == "Ana"
    waited = (team.clock.now() - team.clock.wall).total_seconds()
    assert 1200 <= waited < 1300 + 60  # asked at 20m of fake time, not a second of real time
    assert ben_sent.at is not None
    assert record.resolution is not None
    assert (record.resolution.by, record.resolution.via) == ("Ben", "ntfy")
    assert record.applied_at is not None and team.sup.parts.state.pending_decisions
    # Ana's push cannot be edited: she is told who answered; Ben gets his reading.
    told = ntfy.wait_for("ana", 2)[-1].message["message"]
    assert told == f"[loopkit] {ws.name}: answered by Ben via ntfy: Skip the task"
    reading = ntfy.wait_for("ben", 2)[-1].message["message"]
    assert reading.startswith(f"[loopkit] {ws.name}: recorded: → B) Skip the task")
    # ... once each, however often it is told.
    team.sup.parts.announce(team.record(), now=True)
    assert len(ntfy.messages("ana")) == 2 and len(ntfy.messages("ben")) == 2


def test_a_person_in_quiet_hours_is_skipped_for_the_next(ws: Path, ntfy: FakeNtfy) -> None:
    night = Quiet(22 * 60, 7 * 60, "UTC")
    three = datetime(2026, 12, 3, 3, 0, tzinfo=UTC)  # the fake clock's time: 03:00 UTC
    team = Team(ws, ntfy, ana(ntfy, quiet=night), replace(ben(ntfy), after=0.0), wall=three)
    ntfy.wait_for("ben")
    assert ntfy.messages("ana") == []
    [skipped] = [e for e in team.record().delivery if e.person == "Ana"]
    assert skipped.status == "quiet" and "quiet hours 22:00-07:00 (UTC)" in str(skipped.error)


def test_only_listed_people_answer(ws: Path, ntfy: FakeNtfy) -> None:
    from loopkit.errors import NotAllowed

    team = Team(ws, ntfy, ana(ntfy), ben(ntfy))
    with pytest.raises(NotAllowed, match=r"Cleo is not among the people .*: Ana, Ben"):
        team.tap("Cleo", "A")
    assert team.record().is_open
