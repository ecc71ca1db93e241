"""Messages for the running turn as files (SPEC §24): each taken once — by the supervisor or
back by its giver, never both, however the two race — and where it went, said once."""

from __future__ import annotations

import threading
from pathlib import Path

from loopkit.workspace import Workspace
from loopkit.workspace.steer import Said, Says


def test_a_message_is_taken_by_exactly_one_of_the_supervisor_and_its_giver(
    tmp_path: Path,
) -> None:
    says = Says(Workspace(tmp_path, tmp_path / "BLOCKED.md"))
    names = [says.give(f"message {n}", by="ana", via="cli") for n in range(200)]
    taken: list[str] = []
    withdrawn: list[str] = []
    start = threading.Barrier(2)

    def supervisor() -> None:
        start.wait()
        for _ in range(50):
            taken.extend(name for name, _note in says.take())

    def giver() -> None:
        start.wait()
        withdrawn.extend(name for name in reversed(names) if says.withdraw(name))

    threads = [threading.Thread(target=supervisor), threading.Thread(target=giver)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    taken.extend(name for name, _note in says.take())
    assert sorted(taken + withdrawn) == sorted(names)  # every one, once
    assert not set(taken) & set(withdrawn)


def test_where_a_message_went_is_read_once(tmp_path: Path) -> None:
    says = Says(Workspace(tmp_path, tmp_path / "BLOCKED.md"))
    name = says.give("use the staging database", by="ana", via="telegram")
    ((taken, note),) = says.take()
    assert taken == name and (note.text, note.by, note.via) == (
        "use the staging database",
        "ana",
        "telegram",
    )
    assert says.outcome(name) is None  # not said yet
    says.answer(name, Said("turn", "2026-12-05T10:00:00.000Z", "claude", "s-1", 4))
    said = says.outcome(name)
    assert said is not None and said.line("shop") == (
        "shop: delivered into the running turn (claude, session s-1, iteration 4)"
    )
    assert says.outcome(name) is None  # read once
    lost = Said("lost", "2026-12-05T10:00:00.000Z", why="disk full")
    assert lost.line("shop") == (
        "shop: not delivered (disk full); say it again, or `loopkit note` it"
    )
