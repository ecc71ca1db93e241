"""``loopkit status``: what the supervisor is doing, read from state.json and the lock."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

from loopkit import clock
from loopkit.errors import LoopkitError
from loopkit.escalation import adoption, blockfile, delivery, evidence, marker
from loopkit.escalation import dismiss as dismissal
from loopkit.loops import live_line, said_line
from loopkit.message import age, fold
from loopkit.redact import Redactor
from loopkit.requests.store import RequestStore
from loopkit.supervisor import stuck_counters
from loopkit.workspace import Workspace, live
from loopkit.workspace.skipped import SkippedTasks
from loopkit.workspace.state import StateFile, SupervisorLock
from loopkit.workspace.steer import Notes, Steering

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from loopkit.config import Config
    from loopkit.requests.models import DeliveryAttempt
    from loopkit.requests.record import Request


def status(config: Config, *, store: RequestStore | None = None) -> dict[str, Any]:
    """What ``loopkit status`` shows: the loop's state (``blocked`` whenever BLOCKED.md
    stands, whether or not a supervisor waits on it), the supervisor's, and the block:
    since when, the question, the deadline and its action, the last delivery per channel;
    and the ghosts — open requests whose own BLOCKED.md is gone — with the command that
    dismisses each."""
    workspace = Workspace.of(config)
    store = store or RequestStore(workspace)
    state = StateFile(workspace).load()
    holder = SupervisorLock(workspace).holder()
    block = blockfile.state(workspace.blocked)
    supervisor: str | None
    if holder is not None:
        supervisor = "running"
    elif state.status in ("running", "blocked"):
        supervisor = "stopped"  # it was running and is not any more (a crash, kill -9)
    else:
        supervisor = state.status if state.pid else None  # how it ended: stopped, aborted
    if block != "absent":
        shown = "blocked"
    elif holder is not None:
        shown = "paused" if state.status == "paused" else "running"  # never "blocked"
    else:
        shown = supervisor or state.status
    request_id = adoption.block_request_id(workspace, store, state)
    record: Request | None = None
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
    info: dict[str, Any] = {
        "state": shown,
        "supervisor": supervisor,
        "pid": holder if holder and holder > 0 else None,
        "blocked": block != "absent",
        "iteration": state.iteration,
        "task": state.task,
        "failures": state.failures,
        "max_verify_failures": config.loop.max_verify_failures,
        "stuck": stuck_counters.report(config.stuck, state.stuck),
        "skipped_tasks": [one.to_dict() for one in SkippedTasks(workspace).load()],
        "open_request": request if record is None or record.is_open else None,
        "block_request": request,
        "last_exit": state.last_exit,
        "paused_by": paused.line() if (paused := Steering(workspace).paused()) else None,
        "guidance_pending": Notes(workspace).count(),
        "updated_at": state.updated_at,
        # The agent's running turn (SPEC §24): what it runs now, its last words, …
        "live": live.read(workspace, holder) if holder and holder > 0 else None,
        "agent": {  # SPEC §18: the agent's own session and its last result
            "session_id": state.agent_session,
            "result": state.agent_result,
            "resume": state.resume,
            "dependency_down": state.dependency_down,
        },
        "ghosts": [
            {
                "request_id": g.request_id,
                "prompt": g.prompt,
                "dismiss": dismissal.command(g.request_id),
            }
            for g in dismissal.ghosts(store)
        ],
    }
    info.update(_block(config, workspace.blocked, record) if block != "absent" else _no_block())
    info["evidence"] = None
    if block != "absent":  # what the human needs to decide (SPEC §22)
        found = evidence.gather(workspace, Redactor(config.channels.secrets()),
                                base=state.task_base)  # fmt: skip
        info["evidence"] = {"output": found.output, "diff_stat": found.diff_stat,
                            "base": found.base}  # fmt: skip
    return info


def _no_block() -> dict[str, Any]:
    keys = ("blocked_since", "age_seconds", "deadline", "timeout_action", "next_send")
    return {**dict.fromkeys(keys), "deliveries": []}


def _block(config: Config, path: Path, record: Request | None) -> dict[str, Any]:
    now = clock.now()
    since: datetime | None = None
    if record is not None:
        with contextlib.suppress(ValueError):
            since = clock.parse_iso(record.asked_at)
    if since is None:
        with contextlib.suppress(OSError):
            since = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    info = _no_block()
    if since is not None:
        info["blocked_since"] = clock.iso_seconds(since)
        info["age_seconds"] = max(0, int((now - since).total_seconds()))
    if record is None:
        return info
    timeout = record.timeout_default or {}
    info["timeout_action"] = timeout.get("action")
    minutes = timeout.get("after_minutes")
    if record.is_open and not record.timed_out_at and since and isinstance(minutes, int | float):
        info["deadline"] = clock.iso_seconds(since + timedelta(minutes=minutes))
    last: dict[str, DeliveryAttempt] = {}
    for entry in delivery.sends(record):
        last[f"{entry.channel}\0{entry.person or ''}"] = entry
    info["deliveries"] = [
        {"channel": e.channel, "ok": e.ok, "at": e.at, "status": e.status, "error": e.error,
         **({"person": e.person} if e.person else {})}
        for e in last.values()
    ]  # fmt: skip
    due = delivery.next_due(record, config.escalation, now)
    if due is not None:
        info["next_send"] = {
            "channel": due.channel,
            "at": clock.iso_seconds(due.at),
            "kind": due.kind,
            **({"person": due.person} if due.person else {}),
        }
    return info


def render(info: dict[str, Any]) -> str:
    pid = f" (pid {info['pid']})" if info["pid"] else ""
    who = f"; supervisor {info['supervisor']}" if info["blocked"] and info["supervisor"] else ""
    lines = [f"state:     {info['state']}{pid}{who}", f"iteration: {info['iteration']}"]
    if info["task"]:
        lines.append(f"task:      {info['task']}")
    lines.append(f"failures:  {info['failures']} of {info['max_verify_failures']}")
    lines.append(f"stuck:     {stuck_counters.describe(info['stuck'])}")
    running = info.get("live")
    if running:
        lines.append(f"live:      {live_line(running, 200)}")
        said = said_line(running, 200)
        if said:
            lines.append(f"           {said}")
    if info["paused_by"]:
        lines.append(f"paused:    {info['paused_by']} (`loopkit resume` goes on)")
    if info["guidance_pending"]:
        lines.append(f"notes:     {info['guidance_pending']} for the next agent run")
    for skipped in info["skipped_tasks"]:
        since = f" (since {skipped['skipped_at'][:16].replace('T', ' ')} UTC)"
        lines.append(f"skipped:   {skipped['task']}{since if skipped['skipped_at'] else ''}")
    if info["skipped_tasks"]:
        lines.append("           `loopkit unskip TASK` takes one back")
    request = info["block_request"]
    if info["blocked_since"]:
        since = info["blocked_since"][11:16]
        lines.append(f"blocked:   since {since} UTC ({age(info['age_seconds'])})")
    if request:
        lines.append(
            f"request:   {request['request_id']} ({request['status']}): {request['prompt'] or '?'}"
        )
    elif info["blocked"]:
        lines.append("request:   none (BLOCKED.md names no loopkit request)")
    if info["deadline"]:
        lines.append(
            f"deadline:  times out at {info['deadline'][11:16]} UTC → {info['timeout_action']}"
        )
    elif info["timeout_action"] and request and request["status"] in ("open", "deferred"):
        lines.append(f"deadline:  none left (timed out → {info['timeout_action']}: waits)")
    if info["next_send"]:
        send = info["next_send"]
        to = f" to {send['person']}" if send.get("person") else ""
        lines.append(
            f"next:      {send['kind']} via {send['channel']}{to} at {send['at'][11:19]} UTC"
        )
    for entry in info["deliveries"]:
        ok = {True: "sent", False: "failed", None: "in flight"}[entry["ok"]]
        error = f": {entry['error']}" if entry.get("error") else ""
        to = f" to {entry['person']}" if entry.get("person") else ""
        lines.append(f"delivery:  {entry['channel']}{to} {ok} at {entry['at']}{error}")
    lines.extend(_agent_lines(info.get("agent") or {}))
    shown = info.get("evidence") or {}
    if shown.get("output"):
        lines.append("output:    the agent's last lines (redacted):")
        lines += [f"    {line}" for line in shown["output"]]
    if shown.get("diff_stat"):
        lines.append(
            f"changes:   since the task started (git diff --stat {shown['base'] or 'HEAD'}):"
        )
        lines += [f"    {line}" for line in shown["diff_stat"]]
    for ghost in info["ghosts"]:
        lines.append(
            f"ghost:     {ghost['request_id']} (open): {fold(ghost['prompt'], 60)} — its "
            f"BLOCKED.md is gone; nobody will answer it: {ghost['dismiss']}"
        )
    # What the agent wrote (its question, task, output, file names) reaches a terminal here:
    # its escapes shown, never acted on, and no line longer than a screen or two (SPEC §28).
    return "\n".join(marker.visible(line, _WIDTH) for line in lines)


_WIDTH = 300  # characters of a status line


def _agent_lines(agent: dict[str, Any]) -> list[str]:
    """The agent's session, its last result, a resume that fell back, an API down."""
    lines = []
    result = agent.get("result") or {}
    if agent.get("session_id") or result:
        said = [f"session {agent.get('session_id') or '?'}"]
        if isinstance(result.get("total_cost_usd"), int | float):
            said.append(f"${result['total_cost_usd']:.4f}")
        if result.get("is_error"):
            said.append(f"error ({result.get('subtype') or result.get('stop_reason') or '?'})")
        elif result.get("stop_reason") == "tool_deferred":
            said.append(f"deferred {result.get('deferred_tool') or 'a tool call'}")
        if result.get("permission_denials"):
            said.append(f"{len(result['permission_denials'])} permission denials")
        lines.append("agent:     " + " · ".join(said))
    resumed = agent.get("resume") or {}
    if resumed:
        if resumed.get("resumed"):
            how = f"session {resumed.get('session_id')} resumed after the answer"
        else:
            how = (
                f"session {resumed.get('session_id')} did not resume ({resumed.get('reason')}): "
                "a fresh agent run with LOOPKIT_DECISION instead"
            )
        lines.append(f"resume:    iteration {resumed.get('iteration')}: {how}")
    down = agent.get("dependency_down") or {}
    if down:
        lines.append(
            f"api down:  {down.get('error')} since {str(down.get('since'))[11:16]} UTC, "
            f"{down.get('tries')} tries; not counted as failures"
        )
    return lines
