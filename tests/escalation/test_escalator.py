from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit import config
from loopkit.channels import Outcome
from loopkit.config import ChannelSettings, Config
from loopkit.datarecord import replace
from loopkit.errors import BadInput
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.message import Message


class FakeChannel:
    name = "fake"

    def __init__(self, ws: Path, outcome: Outcome | Exception) -> None:
        self.ws = ws
        self.outcome = outcome
        self.sent: list[Message] = []
        self.seen_during_send: dict[str, object] = {}

    def send(self, message: Message) -> Outcome:
        record = json.loads((self.ws / "requests" / f"{message.request_id}.json").read_text())
        self.seen_during_send = {
            "blocked": (self.ws / "BLOCKED.md").is_file(),
            "delivery": record["delivery"],
        }
        self.sent.append(message)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def problems(self) -> list[str]:
        return []


def make(ws: Path, channel: str = "telegram", **env: str) -> Config:
    return config.load(ws, {"LOOPKIT_HITL_CHANNEL": channel, **env})


def ask(**overrides: object) -> Escalation:
    values: dict[str, object] = dict(
        question="Which payment flow?",
        context="Feature: checkout\nFile: pay.py",
        attempted=["read PROMPT.md"],
        choices=[parse_choice("Flow A — keeps the API"), parse_choice("Flow B -- migrates")],
    )
    values.update(overrides)
    return Escalation(**values)  # type: ignore[arg-type]


def test_persist_then_block_then_send_then_record(ws: Path) -> None:
    fake = FakeChannel(ws, Outcome(ok=True, status=200, message_id=77))
    result = Escalator(make(ws), channel_factory=lambda name: fake).escalate(ask())
    assert fake.seen_during_send["blocked"] is True
    in_flight = fake.seen_during_send["delivery"]
    assert isinstance(in_flight, list) and in_flight[-1]["ok"] is None
    record = json.loads((ws / "requests" / f"{result.request.request_id}.json").read_text())
    assert record["status"] == "open"
    assert record["options"][1] == {"label": "Flow B", "value": "flow-b", "consequence": "migrates"}
    [entry] = record["delivery"]
    assert entry["ok"] is True and entry["message_id"] == 77 and entry["channel"] == "telegram"
    text = (ws / "BLOCKED.md").read_text()
    assert f"<!-- loopkit request: {result.request.request_id} -->" in text
    assert fake.sent[0].choices == ("Flow A", "Flow B")


def test_a_failed_send_still_blocks(ws: Path) -> None:
    fake = FakeChannel(ws, Outcome(ok=False, status=500, error="HTTP 500"))
    result = Escalator(make(ws), channel_factory=lambda name: fake).escalate(ask())
    assert (ws / "BLOCKED.md").is_file()
    assert result.request.delivery[-1].ok is False
    assert result.request.delivery[-1].error == "HTTP 500"


def test_a_crashing_channel_still_blocks(ws: Path) -> None:
    fake = FakeChannel(ws, RuntimeError("boom"))
    result = Escalator(make(ws), channel_factory=lambda name: fake).escalate(ask())
    assert (ws / "BLOCKED.md").is_file()
    assert result.request.delivery[-1].ok is False
    assert "RuntimeError: boom" in str(result.request.delivery[-1].error)


def test_unknown_channel_is_recorded_and_blocks(ws: Path) -> None:
    result = Escalator(make(ws, channel="pigeon")).escalate(ask())
    assert (ws / "BLOCKED.md").is_file()
    entry = result.request.delivery[-1]
    assert entry.ok is False and "unknown channel 'pigeon'" in str(entry.error)


def test_channel_none_sends_nothing(ws: Path) -> None:
    def factory(name: str) -> FakeChannel:
        raise AssertionError("no channel should be created")

    result = Escalator(make(ws, channel="none"), channel_factory=factory).escalate(ask())
    assert result.outcome is None and result.request.delivery == []
    assert (ws / "BLOCKED.md").is_file()


def test_inside_the_agents_session_nothing_is_sent_and_no_attempt_recorded(ws: Path) -> None:
    """SPEC §16: the agent's process has no channel secrets; its send could only fail. It
    leaves the send to the supervisor — no channel made, no failed attempt recorded."""

    def factory(name: str) -> FakeChannel:
        raise AssertionError("inside the agent's session no channel should be created")

    agents = Escalator(make(ws), channel_factory=factory, agent_session=True)
    result = agents.escalate(ask())
    assert result.outcome is None and result.request.delivery == []
    record = json.loads((ws / "requests" / f"{result.request.request_id}.json").read_text())
    assert (record["block"], record["raised_by"], record["delivery"]) == ("raised", "agent", [])
    assert (ws / "BLOCKED.md").is_file()
    # Nor does a repair from inside the session (`loopkit status` run by the agent).
    assert agents.sender.recover(agents.store.load(result.request.request_id)) is None
    # The supervisor sends it, once.
    fake = FakeChannel(ws, Outcome(ok=True, status=200, message_id=5))
    supervisors = Escalator(make(ws), channel_factory=lambda name: fake)
    outcome = supervisors.send_left(supervisors.store.load(result.request.request_id))
    assert outcome is not None and outcome.ok and len(fake.sent) == 1
    after = supervisors.store.load(result.request.request_id)
    assert [(e.channel, e.ok, e.message_id) for e in after.delivery] == [("telegram", True, 5)]
    assert supervisors.send_left(after) is None and len(fake.sent) == 1


def test_the_supervisor_leaves_other_blocks_to_their_own_sender(ws: Path) -> None:
    """``send_left`` is for a block its agent left unsent; a question asked outside the
    session sent (or tried) itself, and is retried on its own schedule."""
    failing = FakeChannel(ws, Outcome(ok=False, status=500, error="down"))
    asked = Escalator(make(ws), channel_factory=lambda name: failing).escalate(ask()).request
    assert asked.raised_by is None and len(failing.sent) == 1
    fake = FakeChannel(ws, Outcome(ok=True, status=200))
    supervisors = Escalator(make(ws), channel_factory=lambda name: fake)
    assert supervisors.send_left(supervisors.store.load(asked.request_id)) is None
    assert fake.sent == []


def test_second_escalation_joins_and_sends_nothing(ws: Path) -> None:
    fake = FakeChannel(ws, Outcome(ok=True, status=200))
    escalator = Escalator(make(ws), channel_factory=lambda name: fake)
    first = escalator.escalate(ask())
    before = (ws / "BLOCKED.md").read_text()
    second = escalator.escalate(ask(question="Also: which currency?"))
    assert second.joined == first.request.request_id
    assert len(fake.sent) == 1
    assert (ws / "BLOCKED.md").read_text() == before
    record = json.loads((ws / "requests" / f"{first.request.request_id}.json").read_text())
    assert record["joined"][0]["question"] == "Also: which currency?"
    assert len(list((ws / "requests").glob("*.json"))) == 1


def test_foreign_blocked_file_keeps_the_question(ws: Path) -> None:
    (ws / "BLOCKED.md").write_text("# Blocked\nhand-written\n")
    fake = FakeChannel(ws, Outcome(ok=True))
    result = Escalator(make(ws), channel_factory=lambda name: fake).escalate(ask())
    assert fake.sent == []
    assert (ws / "BLOCKED.md").read_text() == "# Blocked\nhand-written\n"
    saved = json.loads((ws / "requests" / f"{result.request.request_id}.json").read_text())
    assert saved["prompt"] == "Which payment flow?"
    assert saved["block"] == "joined" and "joined_to" not in saved  # a block naming none


@pytest.mark.parametrize("count", [0, 4])
def test_choice_count_is_refused_before_writing(ws: Path, count: int) -> None:
    choices = [parse_choice(f"Option {n}") for n in range(count)]
    with pytest.raises(BadInput, match="give 1 to 3"):
        Escalator(make(ws)).escalate(ask(choices=choices))
    assert not (ws / "requests").exists() and not (ws / "BLOCKED.md").exists()


def test_a_folder_at_the_block_path_is_refused_and_the_question_is_kept(ws: Path) -> None:
    (ws / "BLOCKED.md").mkdir()
    with pytest.raises(BadInput, match=r"is a folder, not a file.*the question is saved"):
        Escalator(make(ws)).escalate(ask())
    (saved,) = (ws / "requests").glob("*.json")
    assert json.loads(saved.read_text())["block"] == "pending"


def test_crash_mid_send_is_sent_once_more_marked_repeat(ws: Path) -> None:
    fake = FakeChannel(ws, Outcome(ok=True, status=200, message_id=1))
    escalator = Escalator(make(ws), channel_factory=lambda name: fake)
    record = escalator.escalate(ask()).request
    # Simulate a crash between "ok: null written" and the outcome being recorded.
    record.delivery.append(replace(record.delivery[-1], ok=None, status=None, message_id=None))
    escalator.store.save(record)
    escalator.resume_delivery(escalator.store.load(record.request_id))
    after = escalator.store.load(record.request_id)
    assert [e.repeat for e in after.delivery] == [False, False, True]
    assert after.delivery[1].status == "interrupted"
    assert after.delivery[1].ok is False  # no longer "in flight"
    assert after.delivery[2].ok is True
    assert len(fake.sent) == 2
    # Now every attempt is finished: a further restart sends nothing.
    assert escalator.resume_delivery(after) is None
    assert len(fake.sent) == 2


@pytest.mark.parametrize(
    ("text", "label", "consequence"),
    [
        ("Retry — with a hint", "Retry", "with a hint"),
        ("Skip – en dash", "Skip", "en dash"),
        ("Abort -- double", "Abort", "double"),
        ("Plain label", "Plain label", ""),
        ("Re-run - hyphen spaced", "Re-run", "hyphen spaced"),
    ],
)
def test_parse_choice(text: str, label: str, consequence: str) -> None:
    choice = parse_choice(text)
    assert (choice.label, choice.consequence) == (label, consequence)


def test_secrets_never_reach_the_record(ws: Path) -> None:
    token = "123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-secret"
    cfg = make(ws, LOOPKIT_HITL_TELEGRAM_TOKEN=token, LOOPKIT_HITL_TELEGRAM_CHAT="1")
    fake = FakeChannel(ws, Outcome(ok=False, status="error", error=f"failed for bot{token}/x"))
    Escalator(cfg, channel_factory=lambda name: fake).escalate(ask())
    for path in [*ws.rglob("*.json"), ws / "BLOCKED.md"]:
        assert token not in path.read_text()
    assert isinstance(cfg.channels, ChannelSettings)


def test_non_utf8_text_still_blocks(ws: Path) -> None:
    fake = FakeChannel(ws, Outcome(ok=True))
    result = Escalator(make(ws), channel_factory=lambda name: fake).escalate(
        ask(question="Which file, caf\udce9.txt?", context="nul\x00byte")
    )
    assert "caf\ufffd.txt" in (ws / "BLOCKED.md").read_text()
    assert result.request.situation == "nulbyte"
    assert fake.sent[0].question == "Which file, caf\ufffd.txt?"
