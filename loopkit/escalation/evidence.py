"""What a human needs to decide, next to the question (SPEC section 22): the agent's last
output (redacted, its last :data:`LINES` lines) and ``git diff --stat`` since the task started.

Shown in ``BLOCKED.md``'s Context, by ``loopkit status`` and on the question's page — never in
the five-line message. The output is read back from the newest iteration log
(``.loopkit/logs/iteration-<n>.log``, written redacted by the supervisor) and passes the
caller's redactor again; the diff is against the commit the supervisor recorded when the
task started (``task_base`` in ``state.json``), else against ``HEAD``. Outside a git checkout
there is no diff, and no ``git`` is run.
"""

from __future__ import annotations

import os
import re

from loopkit import readfile
from loopkit.datarecord import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from loopkit.redact import Redactor
    from loopkit.workspace import Workspace

LINES = 20
TAIL_BYTES = 256 * 1024
GIT_TIMEOUT = 3.0
_LOG = re.compile(r"\Aiteration-(\d+)\.log\Z")
_FOOTER = re.compile(r"\A--- agent: \S+ after [\d.]+ s\Z")


@record(frozen=True, slots=True)
class Evidence:
    output: list[str] = field(default_factory=list)  # the agent's last lines, redacted
    diff_stat: list[str] = field(default_factory=list)  # `git diff --stat` lines
    base: str | None = None  # what the diff is against

    def lines(self) -> list[str]:
        """The evidence as BLOCKED.md's Context carries it (indented: a code block)."""
        found: list[str] = []
        if self.output:
            found.append(f"Agent's last output (last {len(self.output)} lines, redacted):")
            found += [f"    {line}" for line in self.output]
        if self.diff_stat:
            since = f" {self.base[:12]}" if self.base else " HEAD"
            found.append(f"Changes since the task started (git diff --stat{since}):")
            found += [f"    {line}" for line in self.diff_stat]
        return found


def git_top(root: Path) -> Path | None:
    """The git checkout holding ``root`` (found by its ``.git`` as git finds it: from the
    folder's real path, symlinks resolved), or None; with ``GIT_DIR`` set, git is told where
    the repository is, and ``root`` itself is answered."""
    if os.environ.get("GIT_DIR"):
        return root
    real = root.resolve()
    for folder in (real, *real.parents):
        if (folder / ".git").exists():
            return folder
    return None


def head(root: Path) -> str | None:
    """The commit ``root``'s checkout is at (the task's base), or None outside git."""
    if git_top(root) is None:
        return None
    found = _git(root, "rev-parse", "HEAD")
    return found[0] if found else None


def _git(root: Path, *args: str) -> list[str]:
    import subprocess  # only in a git checkout: ~20 M instructions of start-up elsewhere

    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.splitlines() if done.returncode == 0 else []


def agent_output(workspace: Workspace, lines: int = LINES) -> list[str]:
    """The last ``lines`` lines the agent printed in the newest iteration with output."""
    folder = workspace.state_dir / "logs"
    try:
        numbered = [(int(m.group(1)), n) for n in os.listdir(folder) if (m := _LOG.match(n))]
    except OSError:
        return []
    for _, name in sorted(numbered, reverse=True)[:3]:
        try:
            data = readfile.read_bytes(folder / name)[-TAIL_BYTES:]
        except OSError:
            continue
        found = _agent_part(data.decode("utf-8", "replace").splitlines())
        if found:
            return found[-lines:]
    return []


def _agent_part(log: list[str]) -> list[str]:
    """The agent's lines in one iteration's log: after its header, up to its footer."""
    start = None
    for index, line in enumerate(log):
        if line.startswith("--- agent: ") and not _FOOTER.match(line):
            start = index + 1
    if start is None:
        return []
    part: list[str] = []
    for line in log[start:]:
        if line.startswith("--- "):
            break
        part.append(line.rstrip())
    while part and not part[-1]:
        part.pop()
    return part


def gather(workspace: Workspace, redactor: Redactor, *, base: str | None) -> Evidence:
    """The agent's last output and the diff since ``base`` (else ``HEAD``)."""
    output = [redactor.text(line) for line in agent_output(workspace)]
    stat: list[str] = []
    if git_top(workspace.root) is not None:
        stat = _git(workspace.root, "diff", "--stat", base or "HEAD")
    return Evidence(output, [redactor.text(line.strip()) for line in stat], base)


def task_base(workspace: Workspace) -> str | None:
    """The commit the supervisor recorded when the current task started (``state.json``)."""
    try:
        data = readfile.json_document(readfile.read_text(workspace.state_dir / "state.json"))
    except (OSError, ValueError):
        return None
    base = data.get("task_base") if isinstance(data, dict) else None
    return base if isinstance(base, str) and re.fullmatch(r"[0-9a-f]{7,64}", base) else None
