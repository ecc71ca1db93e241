"""The current task: the first line of ``task_file`` matching ``task_pattern``.

With no ``task_file`` the whole loop is one task (``None``). Skipped tasks are passed over,
so *Skip the task* moves the loop to the next unchecked line.

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
from loopkit.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

DEFAULT_PATTERN = r"^- \[ \] (.+)$"
PATTERN_TIMEOUT = 5.0  # seconds for a pattern of the user's own to find the task
# The child: the first match not skipped (``task`` None: none), from JSON on stdin.
_CHILD = """
import json, re, sys
given = json.load(sys.stdin)
regex = re.compile(given["pattern"], re.MULTILINE)
task = None
for match in regex.finditer(given["text"]):
    found = (match.group(1) if regex.groups else match.group(0)).strip()
    if found and found not in given["skipped"]:
        task = found
        break
json.dump({"task": task}, sys.stdout)
"""


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
    try:
        text = readfile.read_text(root / task_file, errors="replace")
    except OSError:
        return None
    if pattern is None or pattern == DEFAULT_PATTERN:
        return _first(DEFAULT_PATTERN, text, frozenset(skipped))
    return _bounded(pattern, text, frozenset(skipped), timeout, task_file)


def _first(pattern: str, text: str, skipped: frozenset[str]) -> str | None:
    regex = re.compile(pattern, re.MULTILINE)
    for match in regex.finditer(text):
        task = (match.group(1) if regex.groups else match.group(0)).strip()
        if task and task not in skipped:
            return task
    return None


@functools.lru_cache(maxsize=4)  # an iteration asks again of the same file: one child
def _bounded(
    pattern: str, text: str, skipped: frozenset[str], timeout: float, task_file: str
) -> str | None:
    given = json.dumps({"pattern": pattern, "text": text, "skipped": sorted(skipped)})
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
    task = json.loads(done.stdout)["task"]
    return task if isinstance(task, str) else None
