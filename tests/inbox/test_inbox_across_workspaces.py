"""SPEC §10 on one machine: the registry, `loopkit inbox`, answers from any folder, and an
answer given while nobody waited reaching the next agent run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loopkit import atomicfile, clock
from loopkit.home import Registry, home

from helpers import loopkit, wait_until

ESCALATE = (
    "escalate", "-c", "ctx", "-a", "tried", "--choice", "Flow A — old", "--choice", "Flow B — new"
)  # fmt: skip


def test_the_home_defaults_to_xdg_state(tmp_path: Path) -> None:
    assert home({"LOOPKIT_HOME": str(tmp_path / "h")}) == tmp_path / "h"
    assert home({"XDG_STATE_HOME": str(tmp_path / "s")}) == tmp_path / "s" / "loopkit"
    assert home({"HOME": str(tmp_path)}).parts[-3:] == (".local", "state", "loopkit")


def test_the_registry_drops_a_deleted_workspace(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "home")
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    kept.mkdir()
    gone.mkdir()
    registry.register(kept, "kept")
    registry.register(gone, "gone")
    registry.register(kept, "kept")  # again: one entry
    gone.rmdir()
    assert [r.path for r in registry.workspaces()] == [kept]
    assert len(list(registry.folder.glob("*.json"))) == 1
    assert oct((tmp_path / "home").stat().st_mode & 0o777) == "0o700"


def test_registering_again_refreshes_when_it_was_seen_without_an_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = Registry(tmp_path / "home")
    (tmp_path / "ws").mkdir()
    registry.register(tmp_path / "ws", "shop")
    [first] = registry.workspaces()
    writes: list[bool] = []
    real = atomicfile.write_json
    monkeypatch.setattr(
        atomicfile, "write_json",
        lambda p, *a, **k: (writes.append(k.get("durable", True)), real(p, *a, **k)),
    )  # fmt: skip
    wait_until(lambda: clock.iso_millis() > first.last_seen, what="a later millisecond")
    registry.register(tmp_path / "ws", "shop")  # every escalate does this: no fsync
    [again] = registry.workspaces()
    assert writes == [False] and again.last_seen > first.last_seen  # SPEC §10: last seen
    registry.register(tmp_path / "ws", "shop-renamed")  # a changed entry: durable
    assert writes == [False, True] and [r.repo for r in registry.workspaces()] == ["shop-renamed"]
    [entry] = registry.folder.glob("*.json")
    entry.write_text(json.dumps({"path": str(tmp_path / "ws"), "repo": "shop-renamed"}))
    assert registry.workspaces() == []  # damaged: no last_seen
    registry.register(tmp_path / "ws", "shop-renamed")  # … mended by the next registration
    assert writes[-1] is True and [r.repo for r in registry.workspaces()] == ["shop-renamed"]


def test_inbox_and_reply_work_from_any_folder(tmp_path: Path) -> None:
    first, second, elsewhere = tmp_path / "shop", tmp_path / "blog", tmp_path / "elsewhere"
    for folder in (first, second, elsewhere):
        folder.mkdir()
    assert loopkit("-C", str(first), *ESCALATE, "-q", "Which flow?").returncode == 2
    assert loopkit("-C", str(second), *ESCALATE, "-q", "Which theme?").returncode == 2
    listed = loopkit("inbox", "--json", cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["repo"], r["question"]) for r in rows] == [
        ("shop", "Which flow?"),
        ("blog", "Which theme?"),
    ]
    assert rows[0]["choices"] == ["Flow A", "Flow B"] and rows[0]["workspace"] == str(first)
    assert rows[0]["deadline"] and rows[0]["answer"].startswith("loopkit reply --request-id ")
    text = loopkit("inbox", cwd=elsewhere).stdout
    assert "shop · " in text and "Q: Which theme?" in text
    answered = loopkit(
        "reply", "--request-id", rows[1]["request_id"], "--reply", "B", cwd=elsewhere
    )
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["chosen_option"] == "flow-b"
    shown = loopkit("requests", "show", rows[1]["request_id"], cwd=elsewhere)
    assert json.loads(shown.stdout)["status"] == "resolved"
    assert [r["repo"] for r in json.loads(loopkit("inbox", "--json", cwd=elsewhere).stdout)] == [
        "shop"
    ]


def test_an_answer_to_a_bare_escalate_reaches_the_next_run(ws: Path) -> None:
    (ws / "agent.py").write_text(
        "import os\nopen('seen.txt', 'a').write(os.environ.get('LOOPKIT_DECISION', '-') + '\\n')\n"
    )
    (ws / "loopkit.toml").write_text(
        f'[loop]\nagent = ["{sys.executable}", "agent.py"]\npause = "0s"\n'
    )
    assert loopkit("-C", str(ws), *ESCALATE, "-q", "Which flow?").returncode == 2
    unblocked = loopkit("-C", str(ws), "unblock", "--reply", "B")
    assert unblocked.returncode == 0 and not (ws / "BLOCKED.md").exists()
    assert loopkit("-C", str(ws), "run", "--max-iterations", "2").returncode == 0
    assert (ws / "seen.txt").read_text().splitlines() == ["flow-b", "-"]  # once, then no more
    decision = json.loads((ws / ".loopkit" / "last_decision.json").read_text())
    assert decision["parsed_decision"] == "flow-b"
    assert loopkit("-C", str(ws), "run", "--max-iterations", "1").returncode == 0
    assert (ws / "seen.txt").read_text().splitlines() == ["flow-b", "-", "-"]  # never again


def test_a_workspace_s_id_is_the_sha256_of_its_path(tmp_path: Path) -> None:
    import hashlib

    from loopkit.home import workspace_id

    expected = hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    assert workspace_id(tmp_path) == expected  # registry files written before stay found
