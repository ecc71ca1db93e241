"""``loopkit requests``: the list and its filters, ``show``, and ``wait`` with its outcome."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers import ESCALATE, LOOPKIT, ask_json, clean_env, files, loopkit


def test_requests_wait_returns_when_answered(ws: Path) -> None:
    request_id = str(ask_json(ws, "-s", "Which flow?")["request_id"])
    waiter = subprocess.Popen(
        [str(LOOPKIT), "-C", str(ws), "requests", "wait", request_id, "--timeout", "30"],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_env(),
    )
    assert (
        loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "C").returncode == 0
    )
    out, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 3  # C) Abort: aborted
    assert json.loads(out)["outcome"] == "aborted"


def test_wait_on_a_question_unblocked_by_hand_is_not_a_choice(ws: Path) -> None:
    assert loopkit("-C", str(ws), *ESCALATE).returncode == 2
    [path] = files(ws)
    assert loopkit("-C", str(ws), "unblock").returncode == 0
    waited = loopkit("-C", str(ws), "requests", "wait", path.stem)
    assert waited.returncode == 3 and json.loads(waited.stdout)["outcome"] == "unblocked"


def test_requests_listing_filters(ws: Path) -> None:
    q = str(ask_json(ws, "-s", "Which flow?")["request_id"])
    a = str(
        ask_json(ws, "-s", "Deploy?", "--kind", "approval", "--prompt", "Deploy?")["request_id"]
    )
    loopkit("-C", str(ws), "reply", "--request-id", q, "--reply", "A")
    rows = json.loads(loopkit("-C", str(ws), "requests", "--json").stdout)
    assert {r["request_id"] for r in rows} == {q, a}  # oldest first, by the second
    opened = json.loads(loopkit("-C", str(ws), "requests", "--status", "open", "--json").stdout)
    assert [r["request_id"] for r in opened] == [a]
    kinds = json.loads(loopkit("-C", str(ws), "requests", "--kind", "approval", "--json").stdout)
    assert [r["request_id"] for r in kinds] == [a]
    shown = json.loads(loopkit("-C", str(ws), "requests", "show", q).stdout)
    assert shown["resolution"]["chosen_option"] == "proceed"
