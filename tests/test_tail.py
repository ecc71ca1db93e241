"""``loopkit tail`` (SPEC §24): the recent history across the iteration logs, then each line
as it is written, into the next iteration's log — redacted, its escapes shown, never run."""

from __future__ import annotations

import threading
from pathlib import Path

from loopkit.redact import Redactor
from loopkit.tail import Follow, history

from helpers import wait_until


def test_the_history_is_the_last_lines_across_the_newest_logs(tmp_path: Path) -> None:
    (tmp_path / "iteration-9.log").write_text("a\nb\n")
    (tmp_path / "iteration-10.log").write_text("c\nd\npartial")  # numbers, not names, order
    (tmp_path / "iteration-x.log").write_text("not a log\n")
    shown, position = history(tmp_path, 4)
    assert shown == ["b", "── iteration 10 ──", "c", "d"]
    assert position == (10, tmp_path / "iteration-10.log", len(b"c\nd\n"))  # the partial waits
    assert history(tmp_path, 0)[0] == []
    assert history(tmp_path / "none", 5) == ([], None)


def test_following_prints_each_line_once_into_the_next_iteration(tmp_path: Path) -> None:
    first = tmp_path / "iteration-1.log"
    first.write_text("--- agent: claude\n")
    seen: list[str] = []
    follow = Follow(tmp_path, seen.append, Redactor(["hunter2-token"]))
    thread = threading.Thread(target=follow.run, args=(5,))
    thread.start()
    try:
        wait_until(lambda: seen == ["── iteration 1 ──", "--- agent: claude"], what="history")
        with first.open("a") as log:
            log.write("claude: → Bash: pytest\nclaude: tok")  # a line cut by the read
            log.flush()
            wait_until(lambda: "claude: → Bash: pytest" in seen, what="an appended line")
            log.write("en hunter2-token \x1b[31mred\n")
        (tmp_path / "iteration-2.log").write_text("--- verify: pytest\n")
        wait_until(lambda: seen[-1:] == ["--- verify: pytest"], what="the next iteration")
    finally:
        follow.stop.set()
        thread.join(10)
    assert seen[2:] == [
        "claude: → Bash: pytest",
        "claude: token *** \\x1b[31mred",
        "── iteration 2 ──",
        "--- verify: pytest",
    ]
