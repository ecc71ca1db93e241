"""New ground in the workspace (SPEC §25), on a real git repository and on a plain folder:
reaching files or lines the task had not reached is new ground; doing nothing, flipping back,
rewriting the same lines, re-committing a tree seen before, touching only timestamps,
comments, counters or versions is not; commits on another branch count."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from loopkit.supervisor.reach import Reach

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
APP = "def total(cart):\n    return sum(line.price for line in cart)\n"


def git(ws: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True)


def commit(ws: Path, message: str) -> None:
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", message, "--allow-empty")


@pytest.fixture(params=["git", "plain"])
def repo(request: pytest.FixtureRequest, ws: Path) -> Path:
    (ws / "app.py").write_text(APP)
    (ws / "PROGRESS.md").write_text("# Progress\n\nLast updated: 2026-12-03T10:00:00Z\n")
    (ws / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "1.2.3"\n')
    (ws / ".gitignore").write_text("build/\n")
    if request.param == "git":
        git(ws, "init", "-q")
        commit(ws, "init")
    return ws


def reach(repo: Path) -> Reach:
    one = Reach(repo, excluded=("BLOCKED.md",), git="git" if (repo / ".git").exists() else None)
    one.start()
    return one


def test_new_code_is_new_ground_and_rewriting_it_is_not(repo: Path) -> None:
    r = reach(repo)
    (repo / "tax.py").write_text("def rate(country):\n    return RATES[country]\n")
    assert r.take().new > 0
    (repo / "tax.py").write_text("def rate(country):\n    return RATES.get(country, 0)\n")
    assert r.take().new == 0  # the same lines, differently
    (repo / "tax.py").write_text(
        "def rate(country):\n    return RATES.get(country, 0)\n\n\n"
        "def vat(price, country):\n    return price * rate(country)\n"
    )
    assert r.take().new > 0  # more lines: a new function


def test_nothing_done_and_flipping_back_are_no_new_ground(repo: Path) -> None:
    r = reach(repo)
    assert (r.take().new, r.take().note) == (0, "no change")
    (repo / "app.py").write_text(APP.replace("sum(", "sum(  "))
    assert r.take().new > 0  # the first reformat reaches the line
    (repo / "app.py").write_text(APP)
    ground = r.take()
    assert ground.new == 0 and ground.note == "back to an earlier state"
    (repo / "app.py").write_text(APP.replace("sum(", "sum(  "))
    assert r.take().new == 0


@pytest.mark.parametrize(
    "edit",
    [
        lambda ws: (ws / "PROGRESS.md").write_text(
            (ws / "PROGRESS.md").read_text().replace("10:00:00", "10:07:31")
        ),
        lambda ws: (ws / "pyproject.toml").write_text(
            (ws / "pyproject.toml").read_text().replace("1.2.3", "1.2.4")
        ),
        lambda ws: (ws / "app.py").write_text(APP + "# TODO: handle discounts\n"),
        lambda ws: (ws / "app.py").write_text(APP.replace("cart):", "cart):  # noqa: D103")),
        lambda ws: (ws / "app.py").write_text(APP + "\n\n"),
        lambda ws: (ws / "PROGRESS.md").write_text(
            (ws / "PROGRESS.md").read_text() + "<!-- checked at 10:07 -->\n"
        ),
    ],
    ids=[
        "timestamp",
        "version",
        "todo-comment",
        "trailing-comment",
        "blank-lines",
        "markdown-comment",
    ],
)
def test_timestamps_comments_counters_and_versions_are_no_new_ground(repo: Path, edit) -> None:  # type: ignore[no-untyped-def]
    r = reach(repo)
    edit(repo)
    ground = r.take()
    assert ground.new == 0, ground


def test_a_comment_appended_each_turn_or_a_heartbeat_line_is_no_new_ground(repo: Path) -> None:
    r = reach(repo)
    for turn in range(1, 5):
        with (repo / "app.py").open("a") as handle:
            handle.write(f"# TODO({turn}): revisit the rounding\n")
        with (repo / "PROGRESS.md").open("a") as handle:
            handle.write(f"- 2026-12-03T10:{turn:02d}:00Z iteration {turn}: still working\n")
        ground = r.take()
        assert ground.new == (1 if turn == 1 else 0), (turn, ground)


def test_what_loopkit_and_the_build_write_is_left_out(repo: Path) -> None:
    r = reach(repo)
    ignored = ("build",) if (repo / ".git").exists() else ("__pycache__", ".pytest_cache")
    for folder in (".loopkit", "requests", *ignored):
        (repo / folder).mkdir(exist_ok=True)
        (repo / folder / "x.json").write_text('{"a": 1, "b": "a new thing"}\n')
    (repo / "BLOCKED.md").write_text("## Question:\nWhich way?\n")
    (repo / "empty.txt").write_text("")
    assert r.take().new == 0


def test_a_new_file_and_a_deleted_file_are_reached_once(repo: Path) -> None:
    r = reach(repo)
    (repo / "NOTES.md").write_text("# Notes\n")
    assert r.take().new > 0
    (repo / "NOTES.md").unlink()
    assert r.take().new == 0  # back to the beginning
    (repo / "app.py").unlink()
    assert r.take().new > 0
    assert r.take().new == 0


def test_what_differed_when_the_task_began_is_not_its_ground(repo: Path) -> None:
    (repo / "wip.py").write_text("def half_done():\n    raise NotImplementedError\n")
    r = reach(repo)
    assert r.take().new == 0
    r.start()  # the next task
    assert r.take().new == 0


def test_commits_count_by_what_they_reach_on_any_branch(ws: Path) -> None:
    (ws / "app.py").write_text(APP)
    git(ws, "init", "-q", "-b", "main")
    commit(ws, "init")
    r = reach(ws)
    (ws / "tax.py").write_text("def rate(country):\n    return RATES[country]\n")
    assert r.take().new > 0
    commit(ws, "tax")
    assert r.take().new == 0  # committing what was reached already reaches nothing new
    git(ws, "commit", "-q", "--amend", "-m", "tax: rates", "--allow-empty")
    assert r.take().new == 0  # the same tree committed again
    git(ws, "checkout", "-q", "-b", "feature")
    (ws / "export.py").write_text("def export(orders):\n    return [o.id for o in orders]\n")
    commit(ws, "export")
    git(ws, "checkout", "-q", "main")  # the working tree is back on main
    ground = r.take()
    assert ground.new > 0, ground  # the feature branch's new commit reached new lines
    assert r.take().new == 0


def test_a_git_that_fails_falls_back_to_the_files(repo: Path, tmp_path: Path) -> None:
    broken = tmp_path / "git"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    r = Reach(repo, git=str(broken))
    r.start()
    (repo / "tax.py").write_text("def rate(country):\n    return RATES[country]\n")
    assert r.take().new > 0


def test_moving_lines_within_a_file_is_no_new_ground(repo: Path) -> None:
    """The same import block reordered by hand, again and again (git shows a rotation as
    lines removed in one place and added in another)."""
    block = ["import os", "import sys", "from shop import cart"]
    main = "\n\n\ndef main():\n    return cart.run()\n"
    (repo / "cli.py").write_text("\n".join(block) + main)
    r = reach(repo)
    for order in ([1, 0, 2], [2, 0, 1], [0, 2, 1], [0, 1, 2]):
        (repo / "cli.py").write_text("\n".join(block[k] for k in order) + main)
        assert r.take().new == 0, order


def test_a_file_is_read_again_only_when_its_stat_moved(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "notes.txt").write_text("first notes\n")
    r = Reach(ws, git=None)
    r.start()
    opened: list[str] = []
    real_open = open

    def spy(path: object, *args: object, **kwargs: object) -> object:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", spy)
    r.take()
    assert opened == []
    (ws / "notes.txt").write_text("second notes, longer\n")
    assert r.take().new > 0
    assert opened == [str(ws / "notes.txt")]


def test_a_fifo_in_the_tree_is_never_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")  # opening it to read would wait for a writer forever
    r = Reach(ws, git=None)
    r.start()
    assert r.take().new == 0


def test_a_new_file_of_only_numbers_is_no_new_ground(repo: Path) -> None:
    """A counter, a pid file, a stamp: created, then rewritten or appended each turn."""
    r = reach(repo)
    for turn in range(1, 4):
        (repo / "iteration").write_text(f"{turn}\n")
        with (repo / "runs.log").open("a") as handle:
            handle.write(f"{turn}|{1796421449 + turn}|\n")
        assert r.take().new == 0, turn


def test_past_the_text_it_keeps_a_file_counts_as_one_place(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside git the task's first contents are kept to diff against, up to a total: past
    it a file is reached as a whole — still new ground when it changes, once."""
    monkeypatch.setattr("loopkit.supervisor.reach.MAX_KEPT", 10)
    (ws / "big.md").write_text("# Notes\n\nA long paragraph of notes.\n")
    r = Reach(ws, git=None)
    r.start()
    (ws / "big.md").write_text("# Notes\n\nAnother paragraph.\n")
    assert r.take().new == 1
    (ws / "big.md").write_text("# Notes\n\nYet another.\n")
    assert r.take().new == 0
