"""SPEC §16, replies never guess: every reply of the attack corpus reads as the corpus says.

``attack_replies.json`` holds ordinary questions, the supervisor's Retry / Skip / Abort,
approvals and reviews — P0 ones too (a gate, a permission dialog, an ask found P0) — and
replies to them — the issue's cases, near misses (a digit
changed, a negation added, another option's letter prepended, two labels joined, a ``?``
appended) and the good cases that must still match — each with its reading: an option's
value or ``null`` (free text), for approvals and reviews the outcome. ``benchmarks/replies.py``
counts the same corpus against another checkout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopkit.requests.answer import parse_for
from loopkit.requests.models import Option
from loopkit.requests.record import Request

CORPUS = json.loads((Path(__file__).with_name("attack_replies.json")).read_text("utf-8"))
CASES = CORPUS["cases"]


def record_for(shape: dict[str, Any]) -> Request:
    """The shape's request; a P0 one carries its gate binding or ask's P0 verdict."""
    return Request(
        request_id="r1",
        prompt=shape["prompt"],
        kind=shape["kind"],
        options=[Option.from_dict(o) for o in shape["options"]],
        recommendation=shape.get("recommendation"),
        gate=shape.get("gate"),
        needs_human=shape.get("needs_human"),
    )


def test_the_corpus_is_big_and_covers_the_issue() -> None:
    assert len(CASES) >= 480
    replies = {(c["shape"], c["reply"]) for c in CASES}
    issue = [
        ("api", "use the v1 API"), ("api", "Stay on v2"), ("api", "don't use the v2 API"),
        ("api", "A - stay on v1"), ("api", "B - use the v2 API"), ("api", "A - use the v2 API"),
        ("db", "no postgres"), ("db", "not postgres"), ("db", "postgres? no"), ("db", "mssql"),
        ("approval", "not approved"), ("approval", "unapproved"), ("approval", "disapprove"),
        ("approval", "approve or reject?"), ("approval", "approve, no wait, reject"),
        ("approval", "yes?"), ("approval", "ok?"), ("approval", "lgtm?"),
        ("approval", "approve?"), ("deploy", "D"), ("loop", "stop"), ("db", "Postgress"),
        ("loop", "skp"), ("loop", "abrot"), ("loop", "B, this task is obsolete"),
        # SPEC §28's
        ("gate", "approve the rollback instead"), ("gate", "approve in dry-run mode"),
        ("gate", "approve nothing"), ("gate", "approve 0"), ("gate", "approve: false"),
        ("deploy", "Deploy now - NOT"), ("db", "Postgres — no"), ("replicas", "5 replicas — no, 7"),
        ("loop", "A — scratch that"), ("loop", "stop — no, continue"), ("loop", "never mind"),
        ("loop", "quite"), ("loop", "atop"), ("loop", "slip"), ("loop", "gain"),
    ]  # fmt: skip
    assert set(issue) <= replies


@pytest.mark.parametrize("case", CASES, ids=[f"{c['shape']}:{c['reply']}" for c in CASES])
def test_each_reply_reads_as_the_human_meant_or_as_free_text(case: dict[str, Any]) -> None:
    shape = CORPUS["shapes"][case["shape"]]
    record = record_for(shape)
    decision, extra = parse_for(record, case["reply"])
    if shape["kind"] == "question":
        assert decision.chosen_option == case["expect"]
        if case["expect"] is None:
            assert decision.free_text == case["reply"]
    else:
        assert extra["outcome"] == case["expect"]
        if case["expect"] == "approved":  # never feedback read as an approval
            assert decision.matched_by != "free_text"
    if case.get("note"):
        assert (extra.get("note") or extra.get("reason")) == case["note"]
