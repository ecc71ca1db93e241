"""run.sh, the demo workspace and the example config, as a user would run them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from loopkit import config

from helpers import LOOPKIT, clean_env, loopkit

ROOT = Path(__file__).resolve().parents[2]  # tests/e2e/ → the repository


def run_sh(ws: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "run.sh"), str(ws)],
        env=clean_env(LOOPKIT=str(LOOPKIT)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_run_sh_exits_2_at_the_head_when_blocked(ws: Path) -> None:
    lines = [f"line {n}" for n in range(40)]
    (ws / "BLOCKED.md").write_text("# Blocked\n" + "\n".join(lines) + "\n")
    (ws / "loopkit.toml").write_text('[loop]\nagent = "touch ran"\n')
    done = run_sh(ws)
    assert done.returncode == 2
    assert done.stdout.splitlines() == ["# Blocked", *lines[:29]]
    assert not (ws / "ran").exists()


def test_run_sh_runs_until_done(ws: Path) -> None:
    (ws / "loopkit.toml").write_text(
        '[loop]\nagent = "echo x >> runs.txt"\ndone = "test $(wc -l < runs.txt) -ge 3"\n'
        'pause = "0s"\n'
    )
    done = run_sh(ws)
    assert done.returncode == 0, done.stderr
    assert (ws / "runs.txt").read_text().count("x") == 3


def test_the_demo_escalates_on_the_third_failure(tmp_path: Path) -> None:
    ws = tmp_path / "demo"
    shutil.copytree(ROOT / "examples" / "demo", ws)
    done = loopkit("-C", str(ws), "run", "--exit-on-block")
    assert done.returncode == 2, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("agent: iteration")]
    assert len(said) == 3  # the agent's runs, as the console echoed them
    assert "## Question:" in (ws / "BLOCKED.md").read_text()
    assert len(list((ws / "requests").glob("*.json"))) == 1
    assert "[loopkit] blocked in demo on " in done.stderr  # the five lines, printed
    assert loopkit("-C", str(ws), "check").returncode == 2
    (ws / "BLOCKED.md").unlink()
    assert loopkit("-C", str(ws), "check").returncode == 0


def test_demo_script_runs_in_its_own_home_and_leaves_no_question_open(tmp_path: Path) -> None:
    """SPEC §26: the user's inbox, ps and phone never see the demo's question (it runs in a
    LOOPKIT_HOME of its own, with no channel of the user's), and the demo answers it."""
    mine = clean_env(LOOPKIT_HITL_CHANNEL="pigeon")  # the user's own (here: an unusable one)
    done = subprocess.run(
        [str(ROOT / "examples" / "demo" / "demo.sh")],
        env={**mine, "LOOPKIT": str(LOOPKIT), "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "-> exit 2 (2 = blocked)" in done.stdout
    assert "-> exit 0 (0 = unblocked)" in done.stdout
    [demo] = [p for p in tmp_path.glob("loopkit-demo.*") if p.is_dir()]
    [request] = (demo / "requests").glob("*.json")
    assert json.loads(request.read_text())["status"] == "resolved"  # nothing left open
    assert json.loads(loopkit("inbox", "--json", env=mine).stdout) == []  # the user's inbox
    assert json.loads(loopkit("ps", "--json", env=mine).stdout) == []
    assert not (Path(mine["LOOPKIT_HOME"]) / "workspaces").exists()


def test_example_configs_are_valid(tmp_path: Path) -> None:
    for source in (ROOT / "examples" / "loopkit.toml", ROOT / "examples" / "demo" / "loopkit.toml"):
        ws = tmp_path / source.parent.name
        ws.mkdir()
        shutil.copy(source, ws / "loopkit.toml")
        assert config.load(ws, {}).file == ws / "loopkit.toml"


def test_packaged_template_matches_the_repository_copy() -> None:
    from loopkit.escalation.blockfile import packaged_template

    assert (ROOT / "templates" / "BLOCKED.md.j2").read_text() == packaged_template()
