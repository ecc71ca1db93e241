"""``loopkit ps`` with a fleet, over a fake fleet: other machines' loops as they published
them — stale ones ``unknown`` (a blocked one stays blocked) — and each workspace with an
open block as a blocked row, once, whether or not its machine published a row; a question
asked without blocking is no blocked loop. Names: ``MACHINE:REPO`` when two machines share a
repo name. (Against a real database: ``tests/fleet/test_fleet_loops.py``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopkit import config
from loopkit.datarecord import replace
from loopkit.errors import LoopNotFound
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import LoopRows
from loopkit.loops import Loop, find, listing, pick, remote_key, remote_loops, said_to
from loopkit.requests.hub import Remote
from loopkit.requests.record import Request


def _block(ws: Path, question: str) -> Request:
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "none"\n')
    choices = [parse_choice("Keep — as is"), parse_choice("Migrate — to v2")]
    escalation = Escalation(question, "checkout", ["read the spec"], choices)
    return Escalator(config.load(ws), commit=lambda ws: None).escalate(escalation).request


class Fleet:
    def __init__(self, remotes: list[Remote], rows: list[dict[str, Any]] | None = None) -> None:
        self.remotes = remotes
        self.rows = rows or []

    def remote_open(self) -> list[Remote]:
        return self.remotes

    def remote_loop_rows(self) -> LoopRows:
        return LoopRows(self.rows)

    def steer_remote(
        self, machine: str, workspace: str, command: str, note: str | None, *, by: str, via: str
    ) -> None:
        raise AssertionError("not steered here")


def test_other_machines_blocked_loops_are_rows_of_their_own(ws: Path) -> None:
    first = _block(ws, "Drop the legacy invoices table?")
    joined = replace(first, request_id="later0000001", prompt="And the archive?",
                     created_at="2099-01-01T00:00:00Z")  # fmt: skip
    asked = replace(first, request_id="ask000000001", block=None, prompt="Rename it?")
    rows = remote_loops(Fleet([
        Remote("build-2", "/srv/billing", "billing", joined),
        Remote("build-2", "/srv/billing", "billing", first),
        Remote("build-3", "/srv/docs", "docs", asked),  # asked without a block
    ]))  # fmt: skip
    assert [(r.machine, r.repo, r.state, r.question) for r in rows] == [
        ("build-2", "billing", "blocked", "Drop the legacy invoices table?")
    ]
    [row] = rows
    assert row.key == remote_key("build-2", "/srv/billing") and row.key.startswith("m")
    assert row.request_id == first.request_id and row.pid is None and row.paused_by is None


def published(machine: str, repo: str, state: str, **extra: Any) -> dict[str, Any]:
    """A row as :func:`loopkit.fleet.states.remote` gives it."""
    row = {"machine": machine, "workspace": f"/srv/{repo}", "repo": repo, "state": state,
           "pid": 4242, "iteration": 3, "task": None, "since": "2026-12-03T20:00:00Z",
           "last_verify": {"ok": True, "line": "12 passed", "at": "2026-12-03T20:00:00Z"},
           "question": None, "request_id": None, "spend_usd": 1.5, "paused_by": None,
           "guidance_pending": 0, "problem": None, "heard_at": "2026-12-03T21:00:00Z",
           "stale": False, "heard_seconds": 4.0}  # fmt: skip
    return {**row, **extra}


def test_published_rows_are_loops_and_a_silent_machine_s_read_unknown() -> None:
    rows = remote_loops(Fleet([], [
        published("build-2", "shop", "running"),
        published("build-2", "billing", "paused", paused_by="pause by ana via inbox at …"),
        published("build-3", "docs", "running", stale=True, heard_seconds=185.0),
        published("build-3", "api", "blocked", stale=True, heard_seconds=185.0,
                  question="Drop it?", request_id="r1"),
        published("build-3", "old", "finished", stale=True, heard_seconds=9000.0),
    ]))  # fmt: skip
    by_repo = {one.repo: one for one in rows}
    assert {r: (o.state, o.pid) for r, o in by_repo.items()} == {
        "shop": ("running", 4242), "billing": ("paused", 4242), "docs": ("unknown", None),
        "api": ("blocked", None), "old": ("finished", 4242),
    }  # fmt: skip
    silent = "no word from build-3 for 3m (it said running): that machine is off, or cannot "
    assert by_repo["docs"].problem == silent + "reach the fleet database"
    assert by_repo["api"].question == "Drop it?" and by_repo["api"].problem
    assert by_repo["shop"].key == remote_key("build-2", "/srv/shop")
    assert by_repo["shop"].spend_usd == 1.5 and by_repo["shop"].heard_at
    assert by_repo["old"].problem is None  # it said all it had to say


def test_an_open_block_in_the_fleet_makes_its_machine_s_row_blocked(ws: Path) -> None:
    asked = _block(ws, "Drop the legacy invoices table?")
    rows = remote_loops(Fleet(
        [Remote("build-2", "/srv/billing", "billing", asked)],
        [published("build-2", "billing", "running", iteration=7)],
    ))  # fmt: skip
    [row] = rows  # one row: the published one, blocked now — never both
    assert (row.state, row.iteration, row.question) == (
        "blocked",
        7,
        "Drop the legacy invoices table?",
    )
    assert row.request_id == asked.request_id and row.since == asked.asked_at


def loop(repo: str, machine: str | None) -> Loop:
    return Loop(key=f"k-{repo}-{machine}", repo=repo, workspace=f"/w/{machine}/{repo}",
                machine=machine, state="running", pid=1, iteration=1, task=None, since=None,
                last_verify=None, question=None, request_id=None, spend_usd=None,
                paused_by=None, guidance_pending=0)  # fmt: skip


def test_a_repo_name_two_machines_share_is_named_machine_colon_repo() -> None:
    from loopkit.home import machine

    here = machine()
    found = [loop("api", None), loop("api", "build-2-1a2b3c4d"), loop("shop", "build-2-1a2b3c4d")]
    with pytest.raises(LoopNotFound, match="say which: ") as said:
        pick("api", found)
    assert f"{here}:api" in str(said.value) and "build-2-1a2b3c4d:api" in str(said.value)
    assert pick("build-2-1a2b3c4d:api", found) is found[1]
    assert pick("build-2:api", found) is found[1]  # the host name alone, when it is enough
    assert pick(f"{here}:api", found) is found[0]
    assert pick("shop", found) is found[2]
    assert find("build-9:api", found) == [] and find("api:", found) == []
    with pytest.raises(LoopNotFound, match="on this machine or in the fleet; the loops: api, "
                                           "api on build-2-1a2b3c4d, shop on build-2"):  # fmt: skip
        pick("nosuch", found)


def test_a_listing_says_when_a_fleet_was_not_reached(ws: Path) -> None:
    class Gone(Fleet):
        def remote_loop_rows(self) -> LoopRows:
            return LoopRows([], unreached=True)

    assert listing(Gone([])).unreached
    assert not listing(Fleet([])).unreached
    assert not listing(None).unreached


def _named(*repos: str) -> list[Loop]:
    return [Loop(key=r, repo=r, workspace=f"/srv/{r}", machine=None, state="running", pid=1,
                 iteration=1, task=None, since=None, last_verify=None, question=None,
                 request_id=None, spend_usd=None, paused_by=None, guidance_pending=0)
            for r in repos]  # fmt: skip


def test_say_reads_a_loops_name_first_only_when_more_words_follow() -> None:
    found = _named("shop", "billing")
    assert said_to(("shop", "use", "staging"), found) == ("shop", "use staging")
    assert said_to(("shop",), found) == (None, "shop")  # one word: the message
    assert said_to(("use staging for shop",), found) == (None, "use staging for shop")
    for near in ("Shop", "shop:", "@shop", "shops", "sho"):
        assert said_to((near, "use", "staging"), found) == (None, f"{near} use staging")


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6))
def test_say_never_loses_a_word(words: list[str]) -> None:
    found = _named("shop", "billing")
    repo, text = said_to(tuple(words), found)
    said = [repo, text] if repo else [text]
    assert said == ([words[0], " ".join(words[1:])] if repo else [" ".join(words)])
    assert repo is None or (repo in ("shop", "billing") and len(words) > 1)
