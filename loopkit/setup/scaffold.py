"""``loopkit init``: a starting ``loopkit.toml``, a copy of the BLOCKED.md template, and
loopkit's own files in ``.gitignore``.

``.gitignore`` gets ``.loopkit/``, ``/requests/`` and the blocked file (creating the file or
appending to it, atomically; a line there already is kept): an agent's ``git add -A`` would
otherwise commit loopkit's state into the diff a human is shown. ``/requests/`` is anchored
to the workspace's root, and left out when that folder holds files that are not loopkit's
request records (a project's own ``requests/`` is never ignored by loopkit).
"""

from __future__ import annotations

import os
import re
import textwrap

import tomli_w

from loopkit import atomicfile, readfile
from loopkit.config import CONFIG_NAME
from loopkit.config.keys import KEYS
from loopkit.datarecord import record
from loopkit.errors import WorkspaceError
from loopkit.escalation import blockfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

HEADER = """\
# loopkit configuration. Every key is optional; loopkit's docs/configuration.md lists them
# all, and `loopkit doctor` checks this file. Environment variables (LOOPKIT_HITL_*) override
# it; secrets live only there.
"""


DONE = "loopkit tasks --done"  # true once no task is left: each ticked, or skipped


@record(frozen=True, slots=True)
class InitResult:
    written: list[Path]
    kept: list[Path]
    blocked_file: str = "BLOCKED.md"


@record(frozen=True, slots=True)
class Step:
    """One step of ``init``: ``done`` False when its result was there already; a ``note``
    is no step but something the user must do or know."""

    done: bool
    text: str
    note: bool = False

    def line(self) -> str:
        if self.note:
            return "note  " + self.text
        return ("wrote " if self.done else "kept  ") + self.text


def config_data(
    agent: str | None, verify: str | None, channel: str, task_file: str | None = None
) -> dict[str, Any]:
    loop: dict[str, Any] = {}
    if agent:
        loop["agent"] = agent
    if verify:
        loop["verify"] = verify
    if task_file:
        loop["task_file"] = task_file
        loop["done"] = DONE
    loop.update(
        {
            "pause": "5s",
            "iteration_timeout": "60m",
            "max_verify_failures": 3,
            "required_env": [],
            "preflight": [],
        }
    )
    return {
        "loop": loop,
        "escalation": {
            "channel": channel,
            "blocked_file": "BLOCKED.md",
            "timeout_minutes": 30,
            "timeout_action": "queue",
        },
    }


def config_text(data: dict[str, dict[str, Any]]) -> str:
    """``data`` as TOML, each key under a line saying what it is (the first sentence of its
    meaning, from the one table of keys: :data:`loopkit.config.keys.KEYS`)."""
    tables = []
    for table, values in data.items():
        lines = [f"[{table}]"]
        for key, value in values.items():
            meaning = KEYS[table][key].meaning
            first = meaning.split(". ", 1)[0].rstrip(".") + "."
            lines += [f"# {line}" for line in textwrap.wrap(first, 96)]
            lines.append(tomli_w.dumps({key: value}).rstrip("\n"))
        tables.append("\n".join(lines))
    return "\n\n".join(tables) + "\n"


def init(
    root: Path,
    *,
    agent: str | None,
    verify: str | None,
    channel: str,
    force: bool,
    task_file: str | None = None,
) -> InitResult:
    files = {
        root / CONFIG_NAME: HEADER + config_text(config_data(agent, verify, channel, task_file)),
        root / "templates" / "BLOCKED.md.j2": blockfile.packaged_template(),
    }
    written, kept = [], []
    for path, text in files.items():
        if path.exists() and not force:
            kept.append(path)
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomicfile.write_text(path, text)
        except OSError as exc:
            raise WorkspaceError(
                f"cannot write {path}: {exc.strerror}; make the folder writable"
            ) from None
        written.append(path)
    return InitResult(written, kept, _blocked_file(root / CONFIG_NAME))


def _blocked_file(path: Path) -> str:
    """``[escalation] blocked_file`` of the workspace's file (the default when unreadable)."""
    import tomllib

    try:
        name = tomllib.loads(path.read_text()).get("escalation", {}).get("blocked_file")
    except (OSError, ValueError, AttributeError):
        return "BLOCKED.md"
    return name if isinstance(name, str) and name else "BLOCKED.md"


def read_text(path: Path) -> str:
    """``path``'s text, or "" when it is not there."""
    try:
        return readfile.read_text(path) if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkspaceError(
            f"{path}: cannot read it ({exc}); fix it, then run this again"
        ) from None


def write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomicfile.write_text(path, text)
    except OSError as exc:
        raise WorkspaceError(atomicfile.failure(exc, path)) from None


def ignored(blocked_file: str) -> list[str]:
    """What ``init`` puts in ``.gitignore``: loopkit's state, its request records and the
    blocked file."""
    return [".loopkit/", "/requests/", blocked_file]


def ignore(root: Path, names: list[str]) -> list[Step]:
    """Each of ``names`` not in ``root/.gitignore`` yet appended to it, atomically (the file
    made when there is none); a line there already — with or without its leading ``/`` or
    trailing ``/`` — is kept. ``/requests/`` is left out when ``root/requests`` holds files
    that are not loopkit's request records."""
    path = root / ".gitignore"
    text = read_text(path)
    present = {line.strip().strip("/") for line in text.splitlines()}
    steps: list[Step] = []
    missing: list[str] = []
    for name in names:
        if name.strip("/") in present:
            steps.append(Step(False, f".gitignore: {name}"))
        elif name == "/requests/" and _foreign(root / "requests"):
            steps.append(Step(False, f".gitignore: {name} left out: {root / 'requests'} holds "
                              "files that are not loopkit's request records"))  # fmt: skip
        else:
            missing.append(name)
    if missing:
        sep = "\n" if text and not text.endswith("\n") else ""
        write_text(path, text + sep + "".join(f"{name}\n" for name in missing))
        steps += [Step(True, f".gitignore: {name}") for name in missing]
    return steps


def _foreign(folder: Path) -> bool:
    """Whether ``folder`` holds anything but request records (``<id>.json``) and their
    temporary files: a project's own ``requests/``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    record_name = r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.json\Z|\A\..+\.tmp\Z"
    return any(not re.match(record_name, name) for name in names)
