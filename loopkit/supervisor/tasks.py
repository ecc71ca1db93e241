"""The current task: the first line of ``task_file`` matching ``task_pattern``.

With no ``task_file`` the whole loop is one task (``None``). Skipped tasks are passed over,
so *Skip the task* moves the loop to the next unchecked line. A ``task_file`` that exists
and has no task left — each ticked, or skipped — finishes the loop before an agent runs on
no task: at once without a ``done``; with one, when it says so, asked then (``loopkit tasks
--done``, the ``done`` ``init`` writes, does: it exits 0). A ``done`` of the user's own that
says no lets the loop go on, watched for progress (SPEC §25).

A pattern of the user's own is matched in a child interpreter given :data:`PATTERN_TIMEOUT`
seconds (SPEC §28): Python's ``re`` backtracks, a pattern such as ``^(- \\[ \\] )*(a+)+$``
can take longer than the universe on a line the agent wrote, and nothing stops a match in
process. Past the time it is a config error (78) naming the pattern — never a loop that
hangs between two iterations. The default pattern runs in process: it cannot backtrack.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys

from loopkit import readfile
from loopkit.datarecord import field, record
from loopkit.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

DEFAULT_PATTERN = r"^- \[ \] (.+)$"
PATTERN_TIMEOUT = 5.0  # seconds for a pattern of the user's own to find the tasks
# The child: every task the pattern finds, in order, from JSON on stdin.
_CHILD = """
import json, re, sys
given = json.load(sys.stdin)
regex = re.compile(given["pattern"], re.MULTILINE)
tasks = []
for match in regex.finditer(given["text"]):
    found = (match.group(1) if regex.groups else match.group(0)).strip()
    if found:
        tasks.append(found)
json.dump({"tasks": tasks}, sys.stdout)
"""


@record(frozen=True, slots=True)
class Tasks:
    """The unticked tasks of a task file, in order: ``open`` (the first is the current one)
    and ``skipped``. ``exists``: the file is there (a missing one finishes nothing)."""

    exists: bool
    open: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def current(self) -> str | None:
        return self.open[0] if self.open else None

    @property
    def none_left(self) -> bool:
        """Every task ticked or skipped, in a file that is there: the loop is finished."""
        return self.exists and not self.open


def read_tasks(
    root: Path,
    task_file: str,
    pattern: str | None,
    skipped: Collection[str] = (),
    *,
    timeout: float = PATTERN_TIMEOUT,
) -> Tasks:
    try:
        text = readfile.read_text(root / task_file, errors="replace")
    except OSError:
        return Tasks(exists=False)
    if pattern is None or pattern == DEFAULT_PATTERN:
        every = _all(DEFAULT_PATTERN, text)
    else:
        every = _bounded(pattern, text, timeout, task_file)
    found = Tasks(exists=True)
    for task in dict.fromkeys(every):  # a task listed twice is one task
        (found.skipped if task in skipped else found.open).append(task)
    return found


def current_task(
    root: Path,
    task_file: str | None,
    pattern: str | None,
    skipped: Collection[str] = (),
    *,
    timeout: float = PATTERN_TIMEOUT,
) -> str | None:
    if not task_file:
        return None
    return read_tasks(root, task_file, pattern, skipped, timeout=timeout).current


def _all(pattern: str, text: str) -> tuple[str, ...]:
    regex = re.compile(pattern, re.MULTILINE)
    found = ((m.group(1) if regex.groups else m.group(0)).strip() for m in regex.finditer(text))
    return tuple(task for task in found if task)


@functools.lru_cache(maxsize=4)  # an iteration asks again of the same file: one child
def _bounded(pattern: str, text: str, timeout: float, task_file: str) -> tuple[str, ...]:
    given = json.dumps({"pattern": pattern, "text": text})
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=given,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"[loop] task_pattern {pattern!r} did not find the task in {task_file} within "
            f"{timeout:g} s: it backtracks without end on that text; write it without nested "
            "repetition (such as (a+)+ or (a|aa)*)"
        ) from None
    except OSError as exc:
        raise ConfigError(f"[loop] task_pattern: cannot be matched ({exc.strerror})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise ConfigError(f"[loop] task_pattern {pattern!r} failed on {task_file}: {last}")
    tasks = json.loads(done.stdout)["tasks"]
    return tuple(task for task in tasks if isinstance(task, str))
