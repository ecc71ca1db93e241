"""``.loopkit/audit.jsonl``: a hash chain that ``loopkit audit verify`` checks (SPEC §30) —
any single edit, drop, insertion or reordering of a line is found and named; a torn last line
(a crash mid-append) is told as such; concurrent writers keep the chain whole."""

from __future__ import annotations

import itertools
import json
import multiprocessing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit.audit import chain
from loopkit.audit.chain import Trail

from helpers import loopkit


def _trail(folder: Path, count: int) -> Trail:
    trail = Trail(folder / ".loopkit")
    trail.state_dir.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        chain.append(trail, {"at": f"2026-12-05T00:00:{n:02d}Z", "event": "answer", "n": n,
                             "by": "ana", "request_id": f"r{n}"})  # fmt: skip
    return trail


def test_a_chain_as_written_holds(tmp_path: Path) -> None:
    trail = _trail(tmp_path, 5)
    verdict = chain.verify(trail)
    assert verdict.ok and verdict.lines == 5 and verdict.notes == ()
    lines = trail.path.read_bytes().splitlines()
    first = json.loads(lines[0])
    assert first["seq"] == 1 and first["prev"] == "0" * 64
    for before, line in itertools.pairwise(lines):
        assert json.loads(line)["prev"] == chain.digest(before)


# One mutation of a chain's file: what was done, and the line that must be named.
MUTATIONS = ("edit", "drop", "swap", "duplicate", "insert", "cut_end", "edit_last")


def _mutate(lines: list[bytes], how: str, at: int, char: int) -> tuple[list[bytes], int]:
    lines = list(lines)
    if how == "edit":
        line = bytearray(lines[at])
        spot = char % len(line)
        line[spot] = ord("x") if line[spot] != ord("x") else ord("y")
        lines[at] = bytes(line)
        return lines, at + 1
    if how == "drop":
        del lines[at]
        return lines, at + 1
    if how == "swap":
        other = at + 1 if at + 1 < len(lines) else at - 1
        lines[at], lines[other] = lines[other], lines[at]
        return lines, min(at, other) + 1
    if how == "duplicate":
        lines.insert(at + 1, lines[at])
        return lines, at + 2
    if how == "insert":
        forged = chain.line_of(at + 1, chain.digest(lines[at - 1]) if at else chain.GENESIS,
                               {"event": "answer", "by": "mallory"})  # fmt: skip
        lines.insert(at, forged)
        return lines, at + 2  # the forged line follows its predecessor: the next one cannot
    if how == "cut_end":
        return lines[: at or 1], (at or 1) + 1
    line = bytearray(lines[-1])  # edit_last
    spot = char % len(line)
    line[spot] = ord("x") if line[spot] != ord("x") else ord("y")
    lines[-1] = bytes(line)
    return lines, len(lines)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    count=st.integers(min_value=2, max_value=9),
    how=st.sampled_from(MUTATIONS),
    where=st.integers(min_value=0, max_value=100),
    char=st.integers(min_value=0, max_value=10_000),
)
def test_any_single_mutation_is_found_and_the_first_bad_line_named(
    tmp_path_factory: pytest.TempPathFactory, count: int, how: str, where: int, char: int
) -> None:
    trail = _trail(tmp_path_factory.mktemp("chain"), count)
    lines = trail.path.read_bytes().splitlines()
    at = where % (count - 1 if how == "cut_end" else count)
    mutated, named = _mutate(lines, how, at, char)
    trail.path.write_bytes(b"".join(line + b"\n" for line in mutated))
    verdict = chain.verify(trail)
    assert not verdict.ok, (how, at)
    assert verdict.problem is not None
    assert verdict.problem.startswith(f"audit.jsonl:{named}:"), (how, at, verdict.problem)


def test_a_torn_last_line_is_a_crash_not_tampering_and_the_next_append_mends_it(
    tmp_path: Path,
) -> None:
    trail = _trail(tmp_path, 3)
    whole = trail.path.read_bytes()
    next_line = chain.line_of(4, chain.digest(whole.splitlines()[-1]), {"event": "answer"})
    trail.path.write_bytes(whole + next_line[:20])  # the crash cut the write short
    verdict = chain.verify(trail)
    assert verdict.ok, verdict.problem
    assert any("torn last line" in note and "not tampering" in note for note in verdict.notes)
    chain.append(trail, {"event": "answer", "n": 9})
    mended = chain.verify(trail)
    assert mended.ok and mended.lines == 5 and mended.notes == ()
    events = [json.loads(line)["event"] for line in trail.path.read_bytes().splitlines()]
    assert events[-2:] == ["audit_torn", "answer"]


def test_bytes_without_an_end_after_a_cut_chain_are_tampering(tmp_path: Path) -> None:
    trail = _trail(tmp_path, 4)
    lines = trail.path.read_bytes().splitlines()
    # the last whole line cut into a "torn" one: the head says the chain is longer
    trail.path.write_bytes(b"".join(line + b"\n" for line in lines[:3]) + lines[3][:30])
    verdict = chain.verify(trail)
    assert not verdict.ok and verdict.problem is not None
    assert verdict.problem.startswith("audit.jsonl:4:")


def test_a_head_one_line_behind_is_a_crash_between_the_two_writes(tmp_path: Path) -> None:
    trail = _trail(tmp_path, 3)
    head = trail.head.read_bytes()
    chain.append(trail, {"event": "answer"})
    trail.head.write_bytes(head)  # the crash came after the line, before the head
    verdict = chain.verify(trail)
    assert verdict.ok and any("newer than audit.head" in note for note in verdict.notes)


def _cut(trail: Trail, keep: int) -> None:
    lines = trail.path.read_bytes().splitlines()
    trail.path.write_bytes(b"".join(line + b"\n" for line in lines[:keep]))


def _edit_last(trail: Trail) -> None:
    *kept, last = trail.path.read_bytes().splitlines()
    edited = last.replace(b'"by":"ana"', b'"by":"eve"')  # and its newline gone: "torn"
    trail.path.write_bytes(b"".join(line + b"\n" for line in kept) + edited)


@pytest.mark.parametrize(
    ("tamper", "said"),
    [(lambda t: _cut(t, 2), "2 line(s) cut from the end"), (lambda t: _cut(t, 3), "1 line(s)"),
     (_edit_last, "cut or edited"), (lambda t: t.head.unlink(), "the head is gone")],
    ids=["two cut", "one cut", "last edited, newline cut", "head deleted"],
)  # fmt: skip
def test_tampering_at_the_end_is_not_hidden_by_the_next_append(
    tmp_path: Path, tamper: object, said: str
) -> None:
    """Every hook, reply and escalate appends: what verify finds at the end must still be
    found after the next append (the head is read under the lock, and a gap is said)."""
    trail = _trail(tmp_path, 4)
    tamper(trail)  # type: ignore[operator]
    chain.append(trail, {"event": "answer", "n": 9})
    chain.append(trail, {"event": "answer", "n": 10})
    verdict = chain.verify(trail)
    assert not verdict.ok and verdict.problem is not None, verdict
    assert "written after the trail was cut or edited" in verdict.problem
    assert said in verdict.problem


def _writer(state_dir: str, who: int, count: int) -> None:
    for n in range(count):
        chain.append(Trail(Path(state_dir)), {"event": "gate_decision", "who": who, "n": n})


def test_concurrent_writers_keep_the_chain_whole(tmp_path: Path) -> None:
    trail = Trail(tmp_path / ".loopkit")
    trail.state_dir.mkdir()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(trail.state_dir), who, 25))
               for who in range(4)]  # fmt: skip
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    verdict = chain.verify(trail)
    assert verdict.ok and verdict.lines == 100, verdict.problem


def test_loopkit_audit_verify_names_the_first_bad_line_and_exits_65(ws: Path) -> None:
    (ws / "loopkit.toml").write_text("")
    trail = _trail(ws, 4)
    done = loopkit("-C", str(ws), "audit", "verify")
    assert done.returncode == 0 and "4 line(s): the chain holds" in done.stdout, done.stderr
    lines = trail.path.read_bytes().splitlines()
    lines[1] = lines[1].replace(b'"by":"ana"', b'"by":"eve"')
    trail.path.write_bytes(b"".join(line + b"\n" for line in lines))
    done = loopkit("-C", str(ws), "audit", "verify")
    assert done.returncode == 65
    assert done.stderr.startswith(".loopkit/audit.jsonl:2: edited"), done.stderr


def test_audit_verify_outside_a_workspace_says_so_and_exits_66(tmp_path: Path) -> None:
    done = loopkit("-C", str(tmp_path), "audit", "verify")
    assert done.returncode == 66, done.stdout
    assert "not a loopkit workspace" in done.stderr and "chain holds" not in done.stdout
