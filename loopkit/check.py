"""``loopkit check``: is the workspace blocked? Exit 2 (printing BLOCKED.md's head — its
control characters shown escaped, long lines cut: the agent wrote it) or 0.

Imports only the standard library's cheapest modules. ``loopkit.toml`` is parsed (and
validated, exit 78 when invalid) only when it sets ``blocked_file`` to something other than
the default; otherwise the default name holds and the file is not read further. (``loopkit
init`` writes ``blocked_file = "BLOCKED.md"``: that line is recognised without a TOML parser,
whose import alone costs more than the rest of this command.)
"""

from __future__ import annotations

import os
import sys

from loopkit.discover import NotAFolder, find_workspace
from loopkit.escalation import marker

DEFAULT_BLOCKED = "BLOCKED.md"
EXIT_OK, EXIT_BLOCKED, EXIT_USAGE, EXIT_DATAERR, EXIT_CONFIG = 0, 2, 64, 65, 78


def _error(message: str, code: int) -> int:
    sys.stderr.write(f"loopkit: error: {message}\n")
    return code


def _blocked_name(workspace: str) -> str:
    toml = os.path.join(workspace, "loopkit.toml")
    try:
        with open(marker.open_regular(toml), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return DEFAULT_BLOCKED
    except OSError:  # a FIFO, a folder, unreadable: the full parser says what is wrong
        text = "blocked_file"
    if "blocked_file" not in text or _sets_the_default(text):
        return DEFAULT_BLOCKED
    from pathlib import Path

    from loopkit import config

    return config.load(Path(workspace)).escalation.blocked_file


def _sets_the_default(text: str) -> bool:
    """True when the one ``blocked_file`` line is ``blocked_file = "BLOCKED.md"`` (optionally
    commented after) under ``[escalation]``. Anything less plain → False: the full parser
    decides."""
    table, found = "", 0
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            table = line.split("#", 1)[0].strip()
        if "blocked_file" not in line or line.startswith("#"):
            continue
        key, eq, value = line.partition("=")
        value = value.split("#", 1)[0].strip()
        plain = key.strip() == "blocked_file" and value in ('"BLOCKED.md"', "'BLOCKED.md'")
        if not (eq and plain and table == "[escalation]"):
            return False
        found += 1
    return found == 1


def check(explicit: str | None, as_json: bool = False) -> int:
    """``explicit``: the ``-C`` folder, if given; else the workspace is found (SPEC §9)."""
    try:
        workspace = find_workspace(explicit)
    except NotAFolder as exc:
        return _error(str(exc), EXIT_USAGE)
    try:
        name = _blocked_name(workspace)
    except Exception as exc:  # ConfigError, without importing errors eagerly
        code = getattr(exc, "exit_code", None)
        if code is None:
            raise
        return _error(str(exc), code)
    path = os.path.join(workspace, name)
    if os.path.isfile(path):
        try:
            head = marker.shown_head(path)
        except OSError as exc:
            head = f"({name} exists but cannot be read: {exc.strerror})\n"
        if as_json:
            import json

            request_id = marker.request_id_of(path)
            print(
                json.dumps(
                    {"blocked": True, "blocked_file": path, "request_id": request_id, "head": head}
                )
            )
        else:
            sys.stdout.write(head if head.endswith("\n") or not head else head + "\n")
        return EXIT_BLOCKED
    if os.path.lexists(path):
        return _error(
            f"{path} exists but is not a regular file; remove it (rm -r {name}) so loopkit can "
            "tell blocked from unblocked",
            EXIT_DATAERR,
        )
    if as_json:
        import json

        print(json.dumps({"blocked": False, "blocked_file": path, "request_id": None}))
    return EXIT_OK
