"""``loopkit ps`` with a fleet: other machines' loops that wait on a human are listed as
blocked rows (the fleet shares requests, not loop states), one per workspace, and only
blocks — a question asked without blocking is no blocked loop."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from loopkit import config
from loopkit.escalation.escalator import Escalation, Escalator, parse_choice
from loopkit.loops import remote_key, remote_loops
from loopkit.requests.hub import Remote
from loopkit.requests.record import Request


def _block(ws: Path, question: str) -> Request:
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "none"\n')
    choices = [parse_choice("Keep — as is"), parse_choice("Migrate — to v2")]
    escalation = Escalation(question, "checkout", ["read the spec"], choices)
    return Escalator(config.load(ws), commit=lambda ws: None).escalate(escalation).request


class Fleet:
    def __init__(self, remotes: list[Remote]) -> None:
        self.remotes = remotes

    def remote_open(self) -> list[Remote]:
        return self.remotes

    def remote_loop_rows(self) -> list[dict[str, Any]]:
        return []

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
