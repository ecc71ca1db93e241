"""``[[policy.answers]]`` (SPEC §30): a routine question is answered at once ``by =
"policy"``, labelled so, with no block and a one-line FYI; a P0 question, an approval, a
review and a gate never are; "override" reopens it while the run has not moved on, else
leaves a note for the next run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopkit import config as config_mod
from loopkit.answering import Answerer, Answering
from loopkit.answering.who import Policy
from loopkit.errors import ConfigError, NotAllowed
from loopkit.fleet import Hubs
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from helpers import POLICY, clean_env, loopkit, write_config

ROUTINE = """
[[policy.answers]]
words = ["minor version"]
answer = "latest"
why = "we always take the latest minor version"

[[policy.answers]]
category = "ux"
request_key = "copy-*"
answer = "keep"
why = "the copy stays as written"
"""


def ask(ws: Path, *args: str) -> dict:
    done = loopkit("-C", str(ws), "ask", "--json", "-p", POLICY, *args)
    assert done.returncode in (0, 2), done.stderr
    found: dict = json.loads(done.stdout)
    return found


def test_a_routine_question_is_answered_by_policy_at_once_without_a_block(ws: Path) -> None:
    write_config(ws, ROUTINE)
    asked = ask(ws, "-s", "Which minor version of httpx should we pin?", "-q",
                "Which minor version of httpx?", "--option", "Latest=latest", "--option",
                "Oldest=oldest", "--block")  # fmt: skip
    record = asked["request"]
    assert record["status"] == "resolved"
    res = record["resolution"]
    assert (res["by"], res["via"], res["chosen_option"]) == ("policy", "policy", "latest")
    assert res["policy_why"] == "we always take the latest minor version"
    assert not (ws / "BLOCKED.md").exists()
    listed = loopkit("-C", str(ws), "requests", "--json")
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "resolved"
    audit = [json.loads(line)["event"] for line in
             (ws / ".loopkit" / "audit.jsonl").read_text().splitlines()]  # fmt: skip
    assert audit == ["asked", "answer", "policy_answer"]


@pytest.mark.parametrize(
    "args",
    [
        # P0 by its words, by its category, marked irreversible
        ["-s", "Delete the old rows? minor version", "-q", "Which minor version to delete?"],
        ["-s", "Pick the minor version", "-q", "Which minor version?", "--category",
         "security"],
        ["-s", "Pick the minor version", "-q", "Which minor version?", "--irreversible"],
        # not a question: approvals and reviews are a human's
        ["-s", "Bump the minor version", "-q", "Bump the minor version?", "--kind", "approval"],
    ],
)  # fmt: skip
def test_a_p0_question_or_an_approval_is_never_answered_by_policy(
    ws: Path, args: list[str]
) -> None:
    write_config(ws, ROUTINE)
    asked = ask(ws, *args)
    assert asked["request"]["status"] == "open", asked
    assert asked["request"]["resolution"] is None


def test_the_matchers_given_must_all_hold(ws: Path) -> None:
    write_config(ws, ROUTINE)
    base = ["-s", "The button says Save.", "-q", "Keep the button's copy?", "--category", "ux"]
    assert ask(ws, *base, "--key", "copy-save")["request"]["status"] == "resolved"
    assert ask(ws, *base, "--key", "layout-1")["request"]["status"] == "open"
    assert ask(ws, *base[:-2], "--key", "copy-2")["request"]["status"] == "open"


def test_the_service_refuses_a_policy_answer_to_a_gate_or_a_p0_request(ws: Path) -> None:
    write_config(ws, ROUTINE)
    gate = loopkit("-C", str(ws), "gate", "--json", "--", "true")
    (path,) = (ws / "requests").glob("*.json")
    config = config_mod.load(ws)
    store = RequestStore(Workspace.of(config))
    service = Answering(stores=Stores(lambda _c: store.hub), hubs=Hubs(), here=store)
    who = Answerer(by="policy", via="policy", origin=Policy(1, "routine"))
    with pytest.raises(NotAllowed):
        service.answer(path.stem, "approve", who, confirmed=True)
    assert json.loads(path.read_text())["status"] == "open", gate.stderr


def test_override_reopens_the_question_while_the_run_has_not_moved_on(ws: Path) -> None:
    write_config(ws, ROUTINE)
    asked = ask(ws, "-s", "Which minor version?", "-q", "Which minor version of click?",
                "--option", "Latest=latest", "--option", "Pinned=pinned", "--block")  # fmt: skip
    request_id = asked["request_id"]
    done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "override")
    assert done.returncode == 0 and "reopened" in done.stderr, done.stderr
    record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert record["status"] == "open" and record["resolution"] is None
    assert record["overridden"][0]["policy_answer"]["by"] == "policy"
    assert (ws / "BLOCKED.md").exists()  # asked with --block: a normal block now
    # a human's answer now
    done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "B")
    assert done.returncode == 0, done.stderr
    again = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "override")
    assert again.returncode == 4  # a human's answer is not the policy's to override


def test_override_after_the_run_moved_on_is_left_for_the_next_run(ws: Path) -> None:
    write_config(ws, ROUTINE)
    done = loopkit("-C", str(ws), "ask", "--json", "-p", POLICY, "-s", "Which minor version?",
                   "-q", "Which minor version of click?", "--option", "Latest=latest",
                   env=clean_env(LOOPKIT_ITERATION="3"))  # fmt: skip
    request_id = json.loads(done.stdout)["request_id"]
    # no supervisor runs iteration 3 any more
    done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "override")
    assert done.returncode == 0 and "next agent run" in done.stderr, done.stderr
    record = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert record["status"] == "resolved" and record["overridden"][0]["reopened"] is False
    notes = list((ws / ".loopkit" / "control").rglob("*.json"))
    assert any("overrode loopkit's policy answer" in p.read_text() for p in notes)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('[[policy.answers]]\nanswer = "x"\nwhy = "y"\n', "give category, request_key or words"),
        ('[[policy.answers]]\nwords = ["a"]\nanswer = "x"\n', "why is required"),
        ('[[policy.answers]]\ncategory = "security"\nanswer = "x"\nwhy = "y"\n', "is P0"),
        ('[[policy.answers]]\ncategory = "uxx"\nanswer = "x"\nwhy = "y"\n', "not one of"),
        ('[[policy.answers]]\nwords = ["a"]\nanswer = "x"\nwhy = "y"\nwhen = 1\n', "unknown key"),
    ],
)
def test_a_policy_entry_that_cannot_answer_safely_is_a_config_error(
    ws: Path, text: str, why: str
) -> None:
    write_config(ws, text)
    with pytest.raises(ConfigError, match=why):
        config_mod.load(ws)


def test_a_policy_answers_where_only_listed_people_may(ws: Path) -> None:
    """With [[escalation.people]] only the listed people may answer (SPEC §29); the policy is
    no person, and still answers what is routine — only that."""
    write_config(
        ws,
        ROUTINE
        + '\n[[escalation.people]]\nname = "Ana"\nchannel = "dial"\nafter = "0m"\n'
        + '\n[escalation]\nchannel = "none"\n',
    )
    asked = ask(ws, "-s", "Which minor version of httpx?", "-q", "Which minor version?",
                "--option", "Latest=latest")  # fmt: skip
    assert asked["request"]["status"] == "resolved", asked
    assert asked["request"]["resolution"]["by"] == "policy"
