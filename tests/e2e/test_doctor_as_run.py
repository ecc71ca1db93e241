"""``loopkit doctor`` finds what ``loopkit run`` would trip on (SPEC §26): where ``run``
refuses to start, doctor says the same words and exits 78 as ``run`` does; what ``run``
would fail on later (a program after ``&&``, a command ``/bin/sh`` cannot read, a hook
wrapped so its deny is lost) is a problem doctor names, and ``run`` starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import clean_env, loopkit, write_config

AGENT = '[loop]\nagent = "true"\n'


def doctor(ws: Path, env: dict[str, str]) -> tuple[int, list[dict[str, object]]]:
    done = loopkit("-C", str(ws), "doctor", "--json", env=env, timeout=60)
    data = json.loads(done.stdout)
    assert data["exit"] == done.returncode
    return done.returncode, data["findings"]


# What run refuses to start on: each with doctor's finding that says it.
REFUSED = [
    ("no loopkit.toml", None, {}, "this folder is not a loopkit workspace"),
    ("the dial command's program", AGENT,
     {"LOOPKIT_HITL_CHANNEL": "dial", "LOOPKIT_HITL_DIAL_CMD": "page-me-lk --to 42"},
     "LOOPKIT_HITL_DIAL_CMD runs 'page-me-lk', which is not found on PATH"),
    ("an Apprise URL Apprise cannot parse", AGENT,
     {"LOOPKIT_HITL_CHANNEL": "apprise",
      "LOOPKIT_HITL_APPRISE_URLS": "json://127.0.0.1:9/x, nosuchscheme://key-1234"},
     "URL #2 of LOOPKIT_HITL_APPRISE_URLS is not one Apprise can parse"),
    ("no agent", '[loop]\nverify = "true"\n', {}, "no [loop] agent in"),
    ("a typo in the agent", '[loop]\nagent = "claud-lk -p go"\n', {},
     "[loop] agent: 'claud-lk' is not found on PATH"),
    ("a typo in resume", AGENT + 'resume = "claud-lk -p --resume {session_id}"\n', {},
     "[loop] resume: 'claud-lk' is not found on PATH"),
    ("a broken config", "[loop]\nagnet = 'true'\n", {}, "did you mean 'agent'"),
    ("a typo after a command that succeeds", AGENT + 'verify = "true && pytets-lk -q"\n', {},
     "[loop] verify: 'pytets-lk' is not found on PATH"),
    ("a typo in a pipeline", AGENT + 'verify = "echo x | pytets-lk"\n', {},
     "'pytets-lk' is not found on PATH"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "config", "settings", "said"), REFUSED, ids=[c[0] for c in REFUSED]
)
def test_what_run_refuses_doctor_refuses_in_the_same_words_and_exit(
    ws: Path, case: str, config: str | None, settings: dict[str, str], said: str
) -> None:
    if config is not None:
        write_config(ws, config)
    env = clean_env(**settings)
    run = loopkit("-C", str(ws), "run", "--max-iterations", "1", env=env)
    code, findings = doctor(ws, env)
    assert (run.returncode, code) == (78, 78), run.stderr
    [line] = run.stderr.splitlines()
    assert said in line
    stops = [f for f in findings if f["stops_run"]]
    assert stops and all(f["level"] == "problem" for f in stops)
    assert str(stops[0]["text"]) in line  # the same words
    assert not (ws / ".loopkit" / "state.json").exists()


# What run would trip on later: doctor names it, run starts.
LATER = [
    ("a typo after &&", 'verify = "test -x ./verify.sh && pytets-lk -q"', "[loop] verify: "
     "'pytets-lk' is not found on PATH (it runs after `&&`)"),
    ("a typo after ||", 'done = "test -f DONE || pytets-lk"', "[loop] done: 'pytets-lk' is not "
     "found on PATH (it runs after `||`)"),
    ("a typo in an if", 'preflight = ["if test -f x; then pytets-lk; fi"]', "[loop] preflight: "
     "'pytets-lk' is not found on PATH (it runs in an `if`)"),
    ("a command sh cannot read", 'verify = "if true; then true; fi fi"', "[loop] verify: /bin/sh "
     "cannot read it"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "line", "said"), LATER, ids=[c[0] for c in LATER])
def test_what_run_would_trip_on_later_is_a_problem_and_run_starts(
    ws: Path, case: str, line: str, said: str
) -> None:
    write_config(ws, AGENT + line + "\n")
    code, findings = doctor(ws, clean_env())
    assert code == 1
    problems = [str(f["text"]) for f in findings if f["level"] == "problem"]
    assert any(said in text for text in problems), problems
    assert not any(f["stops_run"] for f in findings)
    assert loopkit("-C", str(ws), "run", "--max-iterations", "0").returncode == 0


def test_a_hook_wrapped_so_its_deny_is_lost_is_a_problem_and_install_unwraps_it(
    ws: Path,
) -> None:
    write_config(ws, AGENT)
    assert loopkit("-C", str(ws), "hook", "install", "claude").returncode == 0
    settings = ws / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    entry = data["hooks"]["PreToolUse"][0]["hooks"][0]
    alone = entry["command"]
    entry["command"] = alone + " || true"
    settings.write_text(json.dumps(data))
    code, findings = doctor(ws, clean_env())
    assert code == 1
    [hook] = [f for f in findings if f["topic"] == "hook" and f["level"] == "problem"]
    assert "|| true" in str(hook["text"]) and "its deny can be lost" in str(hook["text"])
    again = loopkit("-C", str(ws), "hook", "install", "claude")
    assert again.returncode == 0 and "|| true ->" in again.stdout
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0] == {
        **entry,
        "command": alone,
    }
    assert doctor(ws, clean_env())[0] == 0


@pytest.mark.parametrize(
    ("suffix", "wrapped"),
    [(" || true", True), (" || exit 0", True), (" | tee -a hook.log", True), (" >/dev/null", True),
     ("; true", True), (" 2>>hook.log", False), ("", False)],
)  # fmt: skip
def test_which_wrappers_can_lose_the_deny(ws: Path, suffix: str, wrapped: bool) -> None:
    from loopkit.hooks.install import wrapped_head

    head = wrapped_head(f"/opt/lk/bin/loopkit hook claude pretooluse{suffix}",
                        ("hook", "claude", "pretooluse"))  # fmt: skip
    assert (head == ["/opt/lk/bin/loopkit"]) is wrapped
    prefixed = wrapped_head(f"cd /x && /usr/bin/python3 -m loopkit hook claude pretooluse{suffix}",
                            ("hook", "claude", "pretooluse"))  # fmt: skip
    assert prefixed == ["/usr/bin/python3", "-m", "loopkit"]
