"""The states a kill -9 can leave an escalation in, each put right by ``repair``.

Each test writes the files exactly as a crash at one step leaves them (the escalation's own
code up to that step, then nothing), and checks what the next start does with them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from test_escalator import FakeChannel, ask, make

from loopkit import clock
from loopkit.channels import Outcome
from loopkit.datarecord import replace
from loopkit.escalation import blockfile
from loopkit.escalation import repair as repair_mod
from loopkit.escalation.escalator import Escalator
from loopkit.requests.models import DeliveryAttempt
from loopkit.requests.record import Request

OK = Outcome(ok=True, status=200, message_id=5)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "events.jsonl" and not p.name.endswith(".lock")
    }


def repair(esc: Escalator) -> list[str]:
    """The real repair, holding :func:`repair.needed` to it: whatever a repair changes (a
    block written, a send recorded, a temporary file removed), ``needed`` foresaw — so a
    command that asks it first (``status``) never skips a repair."""
    foreseen = repair_mod.needed(esc.config, esc.store)
    before = _files(esc.workspace.root)
    lines = repair_mod.repair(esc)
    if _files(esc.workspace.root) != before:
        assert foreseen, "repair changed files that needed() said needed no repair"
    return lines


def test_nothing_to_repair_is_seen_without_the_escalator(ws: Path) -> None:
    esc = escalator(ws)
    assert not repair_mod.needed(esc.config, esc.store)  # nothing at all
    esc.escalate(ask())  # raised and sent: nothing left undone
    assert not repair_mod.needed(esc.config, esc.store)
    killed_after_the_record(ws)
    assert repair_mod.needed(esc.config, esc.store)
    repair(escalator(ws))
    assert not repair_mod.needed(esc.config, esc.store)


def escalator(ws: Path, fake: FakeChannel | None = None) -> Escalator:
    fake = fake or FakeChannel(ws, OK)
    return Escalator(make(ws), channel_factory=lambda name: fake)


def killed_after_the_record(ws: Path, **overrides: object) -> Request:
    """The record saved with ``block_pending``, BLOCKED.md not written yet."""
    esc = escalator(ws)
    record = esc._new_record(ask(**overrides))
    record.block = "pending"
    esc.store.create(record)
    return record


def on_disk(ws: Path, request_id: str) -> dict[str, object]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def test_a_question_saved_without_its_block_gets_the_block_and_is_sent(ws: Path) -> None:
    record = killed_after_the_record(ws)
    fake = FakeChannel(ws, OK)
    lines = repair(escalator(ws, fake))
    assert blockfile.request_id_of(ws / "BLOCKED.md") == record.request_id
    assert on_disk(ws, record.request_id)["block"] == "raised"
    assert [m.request_id for m in fake.sent] == [record.request_id]
    assert any("BLOCKED.md written now" in line for line in lines)
    # A second start finds nothing left to do.
    assert repair(escalator(ws, fake)) == [] and len(fake.sent) == 1


def test_a_block_written_before_the_flag_was_cleared_is_only_sent(ws: Path) -> None:
    record = killed_after_the_record(ws)
    text, _ = escalator(ws)._render(record)
    blockfile.create(ws / "BLOCKED.md", text)
    before = (ws / "BLOCKED.md").read_text()
    fake = FakeChannel(ws, OK)
    repair(escalator(ws, fake))
    assert (ws / "BLOCKED.md").read_text() == before
    assert on_disk(ws, record.request_id)["block"] == "raised"
    assert len(fake.sent) == 1


def test_a_pending_question_joins_the_block_that_stands_now(ws: Path) -> None:
    standing = escalator(ws).escalate(ask(question="First?")).request
    pending = killed_after_the_record(ws, question="Second?")
    fake = FakeChannel(ws, OK)
    repair(escalator(ws, fake))
    assert fake.sent == []
    joined = on_disk(ws, standing.request_id)["joined"]
    assert isinstance(joined, list) and joined[0]["request_id"] == pending.request_id
    assert on_disk(ws, pending.request_id)["block"] == "joined"
    assert on_disk(ws, pending.request_id)["joined_to"] == standing.request_id
    repair(escalator(ws, fake))  # idempotent: the question is noted once
    joined = on_disk(ws, standing.request_id)["joined"]
    assert isinstance(joined, list) and len(joined) == 1


def test_a_folder_in_the_way_keeps_the_question_until_it_is_gone(ws: Path) -> None:
    (ws / "BLOCKED.md").mkdir()
    record = killed_after_the_record(ws)
    assert repair(escalator(ws)) == []
    assert on_disk(ws, record.request_id)["block"] == "pending"
    (ws / "BLOCKED.md").rmdir()
    repair(escalator(ws))
    assert blockfile.request_id_of(ws / "BLOCKED.md") == record.request_id


def test_a_block_never_sent_is_sent_once_by_racing_starts(ws: Path) -> None:
    esc = escalator(ws)
    record = esc.place(esc._new_record(ask())).request  # killed before the first attempt
    assert on_disk(ws, record.request_id)["delivery"] == []
    fake = FakeChannel(ws, OK)
    assert repair_mod.needed(esc.config, esc.store)
    # The real repair: each start's files change under the others', so no snapshot holds.
    racing = repair_mod.repair
    starts = [threading.Thread(target=racing, args=(escalator(ws, fake),)) for _ in range(4)]
    for start in starts:
        start.start()
    for start in starts:
        start.join()
    assert len(fake.sent) == 1
    delivery = on_disk(ws, record.request_id)["delivery"]
    assert isinstance(delivery, list) and len(delivery) == 1 and delivery[0]["ok"] is True


def test_an_attempt_in_flight_is_repeated_only_after_the_grace(ws: Path) -> None:
    esc = escalator(ws)
    record = esc.place(esc._new_record(ask())).request
    attempt = DeliveryAttempt(channel="telegram", at=clock.iso_millis())
    esc.store.update(record.request_id, lambda r: r.delivery.append(attempt))
    fake = FakeChannel(ws, OK)
    repair(escalator(ws, fake))
    assert fake.sent == []  # a live process may be in the middle of it
    old = clock.iso_millis(clock.now().replace(year=2020))

    def age(r: Request) -> None:
        r.delivery[0] = replace(r.delivery[0], at=old)

    esc.store.update(record.request_id, age)
    repair(escalator(ws, fake))
    assert len(fake.sent) == 1
    delivery = on_disk(ws, record.request_id)["delivery"]
    assert isinstance(delivery, list) and delivery[-1].get("repeat") is True


def test_a_block_a_human_deleted_is_not_raised_again(ws: Path) -> None:
    esc = escalator(ws)
    record = esc.escalate(ask()).request
    (ws / "BLOCKED.md").unlink()  # "deleted ⇒ unblocked", with no supervisor watching
    fake = FakeChannel(ws, OK)
    repair(escalator(ws, fake))
    assert not (ws / "BLOCKED.md").exists() and fake.sent == []
    assert on_disk(ws, record.request_id)["status"] == "open"


def test_stale_temporary_files_of_loopkit_go_and_nothing_else(ws: Path) -> None:
    escalator(ws).escalate(ask())
    old = time.time() - 3600
    stale = [
        ws / "requests" / ".abc.json.k2j4h5g6.tmp",
        ws / ".loopkit" / ".state.json.a1b2c3d4.tmp",
        ws / ".BLOCKED.md.zz99yy88.tmp",
    ]
    kept = [
        ws / ".notes.abcdefgh.tmp",  # the user's own, in the workspace root
        ws / "requests" / ".abc.json.q1w2e3r4.tmp",  # a write in progress right now
    ]
    for path in stale + kept:
        path.write_text("x")
    for path in [*stale, kept[0]]:
        os.utime(path, (old, old))
    lines = repair(escalator(ws))
    assert [p for p in stale if p.exists()] == []
    assert all(p.exists() for p in kept)
    assert "removed 3 temporary file(s)" in lines[0]
