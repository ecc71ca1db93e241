"""Finding the workspace (SPEC §9): -C, LOOPKIT_WORKSPACE, upward, the current folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit.discover import NotAFolder, find_workspace


def test_the_order(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "loopkit.toml").write_text("")
    other = tmp_path / "other"
    other.mkdir()
    deep = str(root / "src" / "deep")
    assert find_workspace(None, {}, deep) == str(root)  # upward
    assert find_workspace(None, {"LOOPKIT_WORKSPACE": str(other)}, deep) == str(other)
    assert find_workspace(str(other), {"LOOPKIT_WORKSPACE": str(root)}, deep) == str(other)
    assert find_workspace("..", {}, deep) == str(root / "src")  # -C relative to the cwd
    lone = tmp_path / "lone"
    lone.mkdir()
    assert find_workspace(None, {}, str(lone)) == str(lone)  # nothing upward: here


def test_a_state_folder_marks_a_workspace_too(tmp_path: Path) -> None:
    (tmp_path / "ws" / ".loopkit").mkdir(parents=True)
    (tmp_path / "ws" / "src").mkdir()
    assert find_workspace(None, {}, str(tmp_path / "ws" / "src")) == str(tmp_path / "ws")


@pytest.mark.parametrize("explicit", [True, False])
def test_a_named_folder_that_is_not_one_is_a_clear_error(tmp_path: Path, explicit: bool) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(NotAFolder, match="is not a folder"):
        if explicit:
            find_workspace(missing, {}, str(tmp_path))
        else:
            find_workspace(None, {"LOOPKIT_WORKSPACE": missing}, str(tmp_path))


def test_the_climb_stops_at_the_git_root(tmp_path: Path) -> None:
    """A stray workspace above a repository (a `.loopkit/` left in the temporary folder) never
    captures the repository: its requests stay in the repository."""
    (tmp_path / ".loopkit").mkdir()
    (tmp_path / "loopkit.toml").write_text("")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    assert find_workspace(None, {}, str(repo / "src")) == str(repo / "src")
    assert find_workspace(None, {}, str(repo)) == str(repo)
    (repo / "loopkit.toml").write_text("")
    assert find_workspace(None, {}, str(repo / "src")) == str(repo)  # its own still counts


def test_a_worktree_or_submodule_git_file_is_a_root_too(tmp_path: Path) -> None:
    (tmp_path / ".loopkit").mkdir()
    repo = tmp_path / "wt"
    repo.mkdir()
    (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    assert find_workspace(None, {}, str(repo)) == str(repo)


def test_the_climb_stops_at_the_home_folder(tmp_path: Path) -> None:
    (tmp_path / ".loopkit").mkdir()  # above the home folder
    home = tmp_path / "home" / "ana"
    (home / "notes").mkdir(parents=True)
    assert find_workspace(None, {"HOME": str(home)}, str(home / "notes")) == str(home / "notes")
    (home / ".loopkit").mkdir()  # the home folder itself is still looked at
    assert find_workspace(None, {"HOME": str(home)}, str(home / "notes")) == str(home)
