"""BLOCKED.md names the commit of a git checkout; outside one, no ``git`` is run at all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from loopkit.escalation.escalator import head_commit
from loopkit.workspace import Workspace


def test_a_checkout_s_commit_is_named(tmp_path: Path) -> None:
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    short = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()  # fmt: skip
    (tmp_path / "sub").mkdir()
    assert head_commit(Workspace(tmp_path / "sub", tmp_path / "sub" / "BLOCKED.md")) == short


def test_outside_a_checkout_no_git_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"git was run: {args}")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert head_commit(Workspace(tmp_path, tmp_path / "BLOCKED.md")) is None


def _checkout(folder: Path) -> str:
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    return subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def test_a_workspace_reached_through_a_symlink_names_its_commit(tmp_path: Path) -> None:
    (tmp_path / "repo" / "sub").mkdir(parents=True)
    short = _checkout(tmp_path / "repo")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "link").symlink_to(tmp_path / "repo" / "sub")
    link = tmp_path / "home" / "link"
    assert head_commit(Workspace(link, link / "BLOCKED.md")) == short


def test_git_dir_in_the_environment_is_git_s_to_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "repo").mkdir()
    short = _checkout(tmp_path / "repo")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "repo" / ".git"))
    elsewhere = tmp_path / "elsewhere"
    assert head_commit(Workspace(elsewhere, elsewhere / "BLOCKED.md")) == short
