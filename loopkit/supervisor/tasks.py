"""The current task: the first line of ``task_file`` matching ``task_pattern``.

With no ``task_file`` the whole loop is one task (``None``). Skipped tasks are passed over,
so *Skip the task* moves the loop to the next unchecked line.
"""

from __future__ import annotations

import re

from loopkit import readfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path


def current_task(
    root: Path, task_file: str | None, pattern: str | None, skipped: Collection[str] = ()
) -> str | None:
    if not task_file:
        return None
    try:
        text = readfile.read_text(root / task_file, errors="replace")
    except OSError:
        return None
    regex = re.compile(pattern or r"^- \[ \] (.+)$", re.MULTILINE)
    for match in regex.finditer(text):
        task = (match.group(1) if regex.groups else match.group(0)).strip()
        if task and task not in skipped:
            return task
    return None
