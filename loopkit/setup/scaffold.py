"""``loopkit init``: a starting ``loopkit.toml`` and a copy of the BLOCKED.md template."""

from __future__ import annotations

import textwrap

import tomli_w

from loopkit import atomicfile
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
# loopkit configuration. Every key is optional; the README lists them all.
# Environment variables (LOOPKIT_HITL_*) override this file; secrets live only there.
"""


@record(frozen=True, slots=True)
class InitResult:
    written: list[Path]
    kept: list[Path]
    blocked_file: str = "BLOCKED.md"


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
