"""The current task, found by ``task_pattern`` (SPEC §28: a pattern of the user's own is
given a bounded time — a catastrophic one is a config error, never a hung loop)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from loopkit.errors import ConfigError
from loopkit.supervisor.tasks import current_task


def test_the_default_and_a_pattern_of_ones_own_find_the_first_task_not_skipped(
    tmp_path: Path,
) -> None:
    (tmp_path / "TASKS.md").write_text("- [x] done\n- [ ] parse dates\n- [ ] round prices\n")
    assert current_task(tmp_path, "TASKS.md", None) == "parse dates"
    assert current_task(tmp_path, "TASKS.md", None, ["parse dates"]) == "round prices"
    mine = r"^- \[ \] (round .+)$"
    assert current_task(tmp_path, "TASKS.md", mine) == "round prices"
    assert current_task(tmp_path, "TASKS.md", mine, ["round prices"]) is None
    assert current_task(tmp_path, "TASKS.md", r"^TODO: .*$") is None


@pytest.mark.parametrize("pattern", [r"^- \[ \] (a|aa)+$", r"^- \[ \] (a+)+$", r"(x+x+)+y"])
def test_a_pattern_that_backtracks_without_end_is_a_config_error_in_time(
    tmp_path: Path, pattern: str
) -> None:
    (tmp_path / "TASKS.md").write_text("- [ ] " + "a" * 40 + "!\n" + "x" * 40 + "\n")
    started = time.monotonic()
    with pytest.raises(ConfigError, match=r"task_pattern .* backtracks"):
        current_task(tmp_path, "TASKS.md", pattern, timeout=0.5)
    assert time.monotonic() - started < 5
