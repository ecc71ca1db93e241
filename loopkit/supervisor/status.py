"""``loopkit status``: what the supervisor is doing, read from state.json and the lock."""

from __future__ import annotations

from typing import Any

from loopkit.config import Config
from loopkit.errors import LoopkitError
from loopkit.escalation import blockfile
from loopkit.requests.store import RequestStore
from loopkit.supervisor.state import StateFile, SupervisorLock
from loopkit.workspace import Workspace


def status(config: Config, *, store: RequestStore | None = None) -> dict[str, Any]:
    workspace = Workspace.of(config)
    store = store or RequestStore(workspace)
    state = StateFile(workspace).load()
    holder = SupervisorLock(workspace).holder()
    block = blockfile.state(workspace.blocked)
    if holder is not None:
        shown = "blocked" if block != "absent" else "running"
    elif state.status in ("running", "blocked"):
        shown = "stopped"  # it was running and is not any more (a crash, kill -9)
    else:
        shown = state.status
    request_id = (blockfile.request_id_of(workspace.blocked) if block == "file" else None) or (
        state.open_request if block != "absent" else None
    )
    request: dict[str, Any] | None = None
    if request_id:
        try:
            record = store.load(request_id)
            request = {
                "request_id": record.request_id,
                "prompt": record.prompt,
                "status": record.status,
                "created_at": record.created_at,
                "path": f"requests/{record.request_id}.json",
            }
        except LoopkitError:
            request = {"request_id": request_id, "prompt": None, "status": "unreadable"}
    return {
        "state": shown,
        "pid": holder if holder and holder > 0 else None,
        "blocked": block != "absent",
        "iteration": state.iteration,
        "task": state.task,
        "failures": state.failures,
        "max_verify_failures": config.loop.max_verify_failures,
        "open_request": request,
        "last_exit": state.last_exit,
        "updated_at": state.updated_at,
    }


def render(info: dict[str, Any]) -> str:
    pid = f" (pid {info['pid']})" if info["pid"] else ""
    lines = [f"state:     {info['state']}{pid}", f"iteration: {info['iteration']}"]
    if info["task"]:
        lines.append(f"task:      {info['task']}")
    lines.append(f"failures:  {info['failures']} of {info['max_verify_failures']}")
    request = info["open_request"]
    if request:
        lines.append(
            f"open:      {request['request_id']} ({request['status']}): {request['prompt'] or '?'}"
        )
    elif info["blocked"]:
        lines.append("open:      BLOCKED.md exists (no loopkit request)")
    return "\n".join(lines)
