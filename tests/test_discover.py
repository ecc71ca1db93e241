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
