"""``loopkit hook claude stop-failure``: Claude Code's turn ended on an API error.

Per Claude Code's hooks reference ("StopFailure", "StopFailure input"): it runs instead of
``Stop`` when the turn ends on an API error, with ``error`` (``rate_limit``,
``overloaded``, ``server_error``, ``authentication_failed``, ``billing_error``, …), optional
``error_details`` and ``last_assistant_message``; its output and exit code are ignored.

The failure is recorded for the supervisor in ``.loopkit/agent_failure.json`` (the error
type, its details folded, the session): ``loopkit run`` reads it when the agent's turn
ends (:func:`take`) and treats a rate limit or an overload as a dependency down, a failed
login or billing as a missing credential. Outside a supervisor it is only logged.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from loopkit import agentresult, atomicfile, clock, discover, readfile
from loopkit.message import clean, fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE = "agent_failure.json"


def path_in(workspace: Path) -> Path:
    return workspace / ".loopkit" / FILE


def record(workspace: Path, event: dict[str, Any]) -> dict[str, Any] | None:
    """Write the failure for the supervisor; what was written (None: not a failure)."""
    error = event.get("error")
    if not isinstance(error, str) or not error:
        return None
    failure = {
        "error": fold(clean(error), 60),
        "error_details": fold(clean(str(event.get("error_details") or "")), 200) or None,
        "session_id": agentresult.session_id(event.get("session_id")),
        "at": clock.iso_seconds(),
    }
    target = path_in(workspace)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    atomicfile.write_json(target, failure, mode=0o600)
    return failure


def take(workspace: Path) -> dict[str, Any] | None:
    """The failure recorded since the last take, removed; None when there is none (or it is
    not one loopkit wrote)."""
    target = path_in(workspace)
    try:
        data = readfile.json_document(readfile.read_text(target))
    except (OSError, ValueError):
        data = None
    with contextlib.suppress(OSError):
        target.unlink()
    if not isinstance(data, dict) or not isinstance(data.get("error"), str):
        return None
    return data


def kind(failure: dict[str, Any]) -> str:
    """``dependency`` (wait and try again), ``credential`` (ask at once) or ``other``:
    :func:`loopkit.agentresult.failure_kind` of its error type (``server_error``, a 529 or a
    500, is a dependency down too)."""
    status = failure.get("status")
    return agentresult.failure_kind(
        str(failure.get("error")), status if isinstance(status, int) else None
    )


def describe(failure: dict[str, Any]) -> str:
    details = failure.get("error_details")
    return f"{failure.get('error')}" + (f" ({details})" if details else "")


def main(explicit: str | None = None) -> int:
    """The hook: record the failure; exit 0 whatever happens (Claude Code ignores it)."""
    import os
    import sys

    try:
        event = readfile.json_document(sys.stdin.buffer.read(1 << 20).decode("utf-8", "replace"))
        if not isinstance(event, dict):
            raise ValueError("not a JSON object")
        cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else os.getcwd()
        workspace = Path(discover.find_workspace(explicit, cwd=cwd))
        failure = record(workspace, event)
        said = f"recorded {describe(failure)}" if failure else "ignored: no error type"
    except Exception as exc:  # a failure hook must never fail anything
        said = f"not recorded ({type(exc).__name__}: {exc})"
    sys.stderr.write(f"loopkit: stop-failure {said}\n")
    return 0
