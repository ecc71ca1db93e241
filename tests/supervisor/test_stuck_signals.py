"""Each stuck signal on the detector alone (no loop): its count, its threshold, its evidence,
``0`` off, and a block's end resetting only the signals it carried. The repetition signals
count only iterations that broke no new ground (SPEC §25): the workspace reached no new
place, verify failed no new way, no task was ticked while verify passed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from loopkit.config import StuckConfig
from loopkit.datarecord import replace
from loopkit.supervisor import stuck, stuck_counters
from loopkit.supervisor.stuck import Detector, Observation
from loopkit.supervisor.stuck_counters import Counters

ALL_OFF = StuckConfig(no_progress=0, same_error=0, repeated_output=0, crash_loop=0)
PYTEST_FAIL = """\
FAILED tests/test_cart.py::test_total_in_cents - assert 19.99 == 1999
tests/test_cart.py:{line}: AssertionError
========================= 1 failed, 56 passed in {secs}s =========================
"""


def detector(**settings: Any) -> Detector:
    return Detector(replace(ALL_OFF, **settings), Counters())


def seen(iteration: int, new: int = 0, note: str = "no change", **fields: Any) -> Observation:
    """An iteration whose workspace reached ``new`` new places (0: none)."""
    return Observation(iteration=iteration, task=fields.pop("task", "prices in cents"),
                       reached=new, reached_note=note, **fields)  # fmt: skip


def fired(d: Detector, observations: list[Observation]) -> list[int]:
    """The iterations at which any signal fired."""
    return [o.iteration for o in observations if d.observe(o)]


def test_no_progress_fires_at_its_threshold_with_the_unchanged_commit() -> None:
    d = detector(no_progress=3)
    assert not d.observe(seen(1, head="1a2b3c4d5e6f7a8b"))
    assert not d.observe(seen(2, head="1a2b3c4d5e6f7a8b"))
    [signal] = d.observe(seen(3, head="1a2b3c4d5e6f7a8b"))
    assert (signal.trigger, signal.count, signal.threshold) == ("no_progress", 3, 3)
    assert "HEAD 1a2b3c4d5e6f unchanged" in signal.context[0]
    assert signal.attempted == [f"iteration {n}: no change" for n in (1, 2, 3)]


def test_flipping_a_file_back_and_forth_is_no_progress() -> None:
    d = detector(no_progress=3)
    news = [1, 0, 0, 0, 0]  # the first flip reaches the line, the rest only go back and forth
    notes = ["reached", "back to an earlier state", "the same lines changed again"] * 2
    assert fired(d, [seen(n, new, notes[n - 1]) for n, new in enumerate(news, 1)]) == [4, 5]
    assert d.counters.quiet[-1] == "iteration 5: back to an earlier state"


def test_new_ground_every_iteration_is_progress() -> None:
    d = detector(no_progress=3)
    assert fired(d, [seen(n, new=3) for n in range(1, 30)]) == []
    assert d.counters.no_progress == 0


def test_same_error_counts_a_task_ticked_over_the_same_failure_across_tasks() -> None:
    """A broken environment fails every task the same way while the agent writes code and
    ticks task after task: each tick over an unchanged failure counts (SPEC §25)."""
    d = detector(same_error=3)
    runs = [
        seen(
            n,
            new=5,
            task=f"task {n}",
            ticked=True,
            verify_exit=1,
            verify_output=PYTEST_FAIL.format(line=40 + n, secs=f"0.{n}"),
        )
        for n in (1, 2, 3, 4)
    ]
    assert fired(d, runs[:3]) == []  # the first is where the failure begins
    [signal] = d.observe(runs[3])
    assert signal.trigger == "same_error"
    first = "> FAILED tests/test_cart.py::test_total_in_cents - assert 19.99 == 1999"
    assert signal.context[0] == first
    assert signal.attempted == [f"iteration {n} on task 'task {n}': exit 1" for n in (2, 3, 4)]


def test_the_same_error_while_the_work_lands_is_not_counted() -> None:
    """A test stays red while the layers beneath it land: new lines each turn."""
    d = detector(same_error=3, no_progress=3, repeated_output=2)
    runs = [seen(n, new=4, verify_exit=1, agent_output=AGENT_SORRY.format(line=1),
                 verify_output=PYTEST_FAIL.format(line=40 + n, secs="0.8"))
            for n in range(1, 12)]  # fmt: skip
    assert fired(d, runs) == []


def test_a_failure_not_seen_before_in_the_task_is_new_ground() -> None:
    """Fewer failing tests, another failing test, a later step: progress; A, B, A, B: not."""
    d = detector(no_progress=3)
    failing = ["a", "b", "c", "d", "e"]
    outputs = [
        "\n".join(f"FAILED tests/t.py::test_{x} - assert False" for x in failing[:k])
        for k in (5, 4, 3, 2, 1)
    ]
    runs = [seen(n, verify_exit=1, verify_output=out) for n, out in enumerate(outputs, 1)]
    assert fired(d, runs) == []
    assert d.broke_new_ground
    flip = [outputs[0], outputs[1]] * 3
    runs = [seen(n, verify_exit=1, verify_output=out) for n, out in enumerate(flip, 6)]
    assert fired(d, runs) == [8, 9, 10, 11]  # 6 and 7 were seen in the task already


def test_a_pass_after_failures_and_a_task_ticked_while_passing_are_new_ground() -> None:
    d = detector(no_progress=2)
    runs = [
        seen(1, verify_exit=1, verify_output=PYTEST_FAIL.format(line=4, secs="0.1")),
        seen(2, verify_exit=0),  # the failure fixed
        seen(3, verify_exit=0, ticked=True),  # the task ticked
        seen(4, task="next", verify_exit=0),
        seen(5, task="next", verify_exit=0),
    ]
    assert fired(d, runs) == [5]


def test_another_error_or_a_pass_starts_the_count_again() -> None:
    d = detector(same_error=3)
    error = PYTEST_FAIL.format(line=42, secs="0.8")
    other = error.replace("test_total_in_cents", "test_tax")
    runs = [
        seen(1, verify_exit=1, verify_output=error),
        seen(2, verify_exit=1, verify_output=error),
        seen(3, verify_exit=1, verify_output=other),
        seen(4, verify_exit=1, verify_output=other),
        seen(5, verify_exit=0, verify_output="57 passed"),
        seen(6, verify_exit=1, verify_output=other),
        seen(7, verify_exit=None),  # verify did not run: the streak neither grows nor ends
        seen(8, verify_exit=1, verify_output=other),
        seen(9, verify_exit=1, verify_output=other),
    ]
    assert fired(d, runs) == [9]  # 1 and 3 are new failures; 6 is the third seen before


AGENT_SORRY = """\
I apologize for the confusion. Looking at the failing test again, the issue is that
`Cart.total()` returns a float in dollars while the test expects an integer number of cents.
I've updated `shop/cart.py` to multiply by 100 before returning. Let me run the tests again to
verify the fix works. The change is on line {line}.
"""


def test_repeated_output_fires_after_its_threshold_of_near_copies() -> None:
    d = detector(repeated_output=4)
    runs = [seen(n, agent_output=AGENT_SORRY.format(line=40 + n)) for n in range(1, 7)]
    assert fired(d, runs) == [5, 6]  # the first is the original, 2–5 its four copies
    signal = d.observe(seen(7, agent_output=AGENT_SORRY.format(line=9)))[0]
    assert signal.trigger == "repeated_output"
    assert "similarity 1.00" in signal.question
    assert signal.context[0].startswith("> ")


def test_repeated_output_is_compared_whole_head_and_tail() -> None:
    """A constant report at the end of every output (a lint run, a plan) makes the last
    2,000 characters equal; what the agent says it did, at the head, still differs."""
    report = "\n".join(f"src/m{n}.py:1:1: D100 Missing docstring in public module"
                       for n in range(60))  # fmt: skip
    heads = [
        "Moved the tax tables into shop/tax.py and wired them into the checkout.",
        "Replaced the hand-rolled JSON encoder with a default hook for Decimal values.",
        "Split the API module into orders and carts; the routes are registered once.",
        "Added the CSV export of orders with an ISO date column and a header row.",
        "Typed the settings with Final and removed the unused currency constants.",
    ]
    d = detector(repeated_output=2)
    runs = [seen(n, agent_output=f"{head}\n\n{report}") for n, head in enumerate(heads, 1)]
    assert fired(d, runs) == []


def test_repeated_output_is_not_counted_while_new_ground_is_broken() -> None:
    d = detector(repeated_output=2)
    runs = [seen(n, new=2, agent_output=AGENT_SORRY.format(line=1)) for n in range(1, 9)]
    assert fired(d, runs) == []


def test_outputs_that_differ_do_not_count_and_short_ones_say_nothing() -> None:
    d = detector(repeated_output=2)
    texts = [
        "Added `parse_header()` to shop/csv.py with tests for quoted fields; 12 passed.",
        "Moved the currency formatting into shop/money.py; the templates call format_cents().",
        "ok",
        "ok",
        "ok",
    ]
    assert fired(d, [seen(n, agent_output=t) for n, t in enumerate(texts, 1)]) == []


def test_crash_loop_counts_failed_runs_that_change_nothing() -> None:
    d = detector(crash_loop=3)
    runs = [
        seen(1, agent_exit=1, agent_output="Error: Invalid API key · Please run /login"),
        seen(2, agent_ending="timeout", agent_exit=None),
        seen(3, agent_exit=1, agent_output="Traceback…\nKeyError: 'model'\n"),
    ]
    assert fired(d, runs[:2]) == []
    [signal] = d.observe(runs[2])
    assert signal.trigger == "crash_loop"
    assert signal.attempted == [
        "iteration 1: agent exit 1, nothing changed",
        "iteration 2: agent timed out, nothing changed",
        "iteration 3: agent exit 1, nothing changed",
    ]
    assert signal.detail == "exit 1: KeyError: 'model'"  # its exit and its last line


def test_a_crash_that_changed_something_or_an_outage_is_not_a_crash_loop() -> None:
    d = detector(crash_loop=2)
    runs = [
        seen(1, agent_exit=1),
        seen(2, new=1, agent_exit=1),  # it crashed, having written a file
        seen(3, agent_exit=1, outage="429 Too Many Requests"),  # dependency down
        seen(4, new=1, agent_exit=0),
        seen(5, agent_exit=1),
    ]
    assert fired(d, runs) == []
    assert d.counters.crash_loop == 1


def test_an_overload_is_asked_as_dependency_down_and_a_denial_as_denied() -> None:
    d = detector(no_progress=3, crash_loop=3)
    down = [seen(n, agent_exit=1, outage="529 overloaded_error") for n in (1, 2, 3)]
    [signal] = fired_signals(d, down)
    assert (signal.trigger, signal.label) == ("no_progress", "dependency down")
    assert "529 overloaded_error" in signal.detail
    d = detector(no_progress=3)
    denied = [seen(n, denied="Bash(git push --force origin main)") for n in (1, 2, 3)]
    [signal] = fired_signals(d, denied)
    assert (signal.label, signal.detail) == ("denied", "Bash(git push --force origin main)")


def fired_signals(d: Detector, observations: list[Observation]) -> list[stuck.Signal]:
    found: list[stuck.Signal] = []
    for o in observations:
        found = d.observe(o)
    return found


def test_cost_is_summed_and_asks_once_past_the_budget_then_after_another_as_much() -> None:
    d = detector(max_cost_usd=1.0)
    costs = [0.3, 0.3, 0.3, 0.3, 0.2, 0.5, 0.5]
    got = [bool(d.observe(seen(n, cost_usd=c))) for n, c in enumerate(costs, 1)]
    assert got == [False, False, False, True, True, True, True]  # until a human answers
    d.counters.pending = ["max_cost_usd"]
    assert stuck_counters.block_ended(d.counters) == ["max_cost_usd"]
    assert not d.observe(seen(8, cost_usd=0.5))
    [signal] = d.observe(seen(9, cost_usd=0.6))
    assert signal.question == (
        "The agent has spent $1.10 since the last approval (max_cost_usd = $1.00)"
    )


def test_task_budgets_are_looked_at_before_an_iteration() -> None:
    d = detector(max_task_iterations=2, task_timeout=3600.0)
    start = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert d.begin("a", start) == [] and d.begin("a", start + timedelta(minutes=5)) == []
    [signal] = d.begin("a", start + timedelta(minutes=10))
    assert (signal.trigger, signal.count) == ("max_task_iterations", 2)
    assert d.begin("b", start + timedelta(minutes=15)) == []  # a new task: a new budget
    [late] = d.begin("b", start + timedelta(minutes=80))
    assert late.trigger == "task_timeout" and late.question.startswith("1 h 05 min on task 'b'")


def test_a_block_ending_resets_only_the_signals_it_carried() -> None:
    d = detector(no_progress=2, crash_loop=2)
    d.observe(seen(1, agent_exit=1))
    found = d.observe(seen(2, agent_exit=1))
    assert sorted(s.trigger for s in found) == ["crash_loop", "no_progress"]
    d.counters.pending = ["crash_loop"]
    stuck_counters.block_ended(d.counters)
    assert (d.counters.crash_loop, d.counters.no_progress) == (0, 2)


@pytest.mark.parametrize("name", ["no_progress", "same_error", "repeated_output", "crash_loop"])
def test_zero_turns_a_signal_off(name: str) -> None:
    d = detector(**{name: 0})
    runs = [
        seen(
            n,
            agent_exit=1,
            verify_exit=1,
            verify_output=PYTEST_FAIL,
            agent_output=AGENT_SORRY,
            cost_usd=5.0,
        )
        for n in range(1, 12)
    ]
    assert fired(d, runs) == []


def test_counters_survive_a_round_trip_and_a_hand_edited_file() -> None:
    d = detector(no_progress=3, same_error=3)
    d.observe(seen(1, verify_exit=1, verify_output="E   boom"))
    again = Counters.from_dict(d.counters.to_dict())
    assert again == d.counters
    broken = Counters.from_dict({"no_progress": "three", "failures_seen": [1, "x"],
                                 "spent_usd": 2})  # fmt: skip
    assert (broken.no_progress, broken.failures_seen, broken.spent_usd) == (0, ["x"], 2.0)


def test_the_question_fits_the_phone_whatever_the_task_is_called() -> None:
    from loopkit.escalation.rubric import MAX_STEM
    from loopkit.supervisor.stuck_questions import escalation

    d = detector(no_progress=1)
    signals = d.observe(seen(1))
    asked = escalation(signals, task="migrate " + "the legacy billing tables " * 10, iteration=1)
    assert len(asked.question) <= MAX_STEM
    assert asked.question.startswith("Stuck (no_progress): No progress in 1 iteration on task")
    assert asked.trigger == "stuck-no-progress" and asked.raised_by == "supervisor"
