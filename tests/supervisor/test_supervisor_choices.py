"""The supervisor's own choices: Skip only when there is a task to skip."""

from __future__ import annotations

from loopkit.supervisor import triggers


def test_skip_is_offered_only_with_a_task() -> None:
    with_task = triggers.verify_failures(task="add prices", failures=3, command="pytest",
                                         last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    assert [c.value for c in with_task.choices] == ["retry", "skip", "abort"]
    without = triggers.verify_failures(task=None, failures=3, command="pytest",
                                       last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    assert [c.label for c in without.choices] == ["Retry with a hint", "Abort the loop"]
    missing = triggers.missing_env(names=["KEY"], task=None, iteration=1, pid=1)
    assert [c.value for c in missing.choices] == ["retry", "abort"]
