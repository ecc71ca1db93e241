"""The current task: the first line of ``task_file`` matching ``task_pattern``.

With no ``task_file`` the whole loop is one task (``None``). Skipped tasks are passed over,
so *Skip the task* moves the loop to the next unchecked line. A ``task_file`` that exists
and has no task left — each ticked, or skipped — is a finished loop: ``loopkit run`` ends
(exit 0) rather than run an agent on no task, and ``loopkit tasks --done`` (the ``done``
``init`` writes) exits 0.
"""

from __future__ import annotations

import re

from loopkit import readfile
from loopkit.datarecord import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from pathlib import Path

DEFAULT_PATTERN = r"^- \[ \] (.+)$"


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
    root: Path, task_file: str, pattern: str | None, skipped: Collection[str] = ()
) -> Tasks:
    try:
        text = readfile.read_text(root / task_file, errors="replace")
    except OSError:
        return Tasks(exists=False)
    regex = re.compile(pattern or DEFAULT_PATTERN, re.MULTILINE)
    found = Tasks(exists=True)
    for match in regex.finditer(text):
        task = (match.group(1) if regex.groups else match.group(0)).strip()
        if not task or task in found.open or task in found.skipped:
            continue
        (found.skipped if task in skipped else found.open).append(task)
    return found
