"""Claude Code's permission dialog, asked on the phone and in the inbox as an approval (SPEC
section 18): the request, the wait, and the decision Claude reads — for the
``permission-request`` hook (:mod:`loopkit.hooks.permission`) and for the supervisor that
speaks with Claude over stream-json (:mod:`loopkit.supervisor.dialogs`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from loopkit import agentsession, clock, log
from loopkit import config as config_mod
from loopkit.escalation import blockfile, gate
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.hooks.approve import call_hash, register, shown_call
from loopkit.message import fold
from loopkit.redact import Redactor
from loopkit.requests.models import Option, Resolution
from loopkit.requests.outcome import wait_for
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.requests.record import Request

# The dialog's answers, by value (the option labels are made where the request is).
ALLOWED, DENIED, ALWAYS_ALLOWED = "approved", "rejected", "always"


def always_rule(event: dict[str, Any]) -> dict[str, Any] | None:
    """The first ``permission_suggestions`` entry that adds an allow rule, if one does."""
    for entry in event.get("permission_suggestions") or []:
        if (
            isinstance(entry, dict)
            and entry.get("type") == "addRules"
            and entry.get("behavior") == "allow"
            and isinstance(entry.get("rules"), list)
            and entry["rules"]
        ):
            return entry
    return None


def _rule_text(entry: dict[str, Any]) -> str:
    rules = []
    for rule in entry["rules"]:
        if isinstance(rule, dict) and isinstance(rule.get("toolName"), str):
            content = rule.get("ruleContent")
            rules.append(f"{rule['toolName']}({content})" if content else rule["toolName"])
    return ", ".join(rules) or "a rule"


def request_for(config: config_mod.Config, event: dict[str, Any], digest: str) -> Request:

    tool_name, tool_input = event["tool_name"], event.get("tool_input", {})
    shown = shown_call(tool_name, tool_input)
    text = " ".join(shown)
    rule = always_rule(event)
    record = gate.approval_request(
        config,
        key=f"claude-permission:{digest}",
        prompt=f"Claude asks permission: `{fold(text, 120 - len('Claude asks permission: ``'))}`",
        situation=f"Command: {text}\nFolder: {event['cwd']}\nTool: {tool_name}"
        + (f"\nAlways allow adds: {_rule_text(rule)}" if rule else ""),
        policy="Claude Code's own permission dialog: allowed or denied by a human",
        trigger="claude-permission",
        attempted="nothing: Claude Code waits on its permission dialog",
        binding={
            "argv": shown,
            "command": text,
            "cwd": event["cwd"],
            "sha256": digest,
            "tool": tool_name,
            "session": str(event.get("session_id") or ""),
        },
    )
    always = [Option("Always allow", ALWAYS_ALLOWED)] if rule else []
    record.options = [Option("Allow", ALLOWED), Option("Deny", DENIED), *always]
    return record


def _decision(behavior: str, **fields: Any) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": behavior, **fields},
        }
    }


def verdict(record: Request, event: dict[str, Any]) -> dict[str, Any] | None:
    """Claude Code's answer for a decided request; None while it is open or when nobody
    answered (expired, dismissed, lifted): Claude's own dialog stands."""
    found = decision(record, event)
    return None if found is None else _decision(found.pop("behavior"), **found)


def decision(record: Request, event: dict[str, Any]) -> dict[str, Any] | None:
    """The dialog's answer for a decided request — ``behavior`` (``allow``, with
    ``updatedPermissions`` for "always"; ``deny`` with ``message``), as the hook's
    ``decision`` and the SDK's ``can_use_tool`` response both take it — or None while it is
    open or when nobody answered."""

    if record.is_open or record.status != "resolved":
        return None
    res = record.resolution or Resolution()
    if res.outcome == "unblocked":
        return None
    chosen = res.outcome or res.chosen_option
    if chosen == ALLOWED:
        return {"behavior": "allow"}
    rule = always_rule(event)
    if chosen == ALWAYS_ALLOWED and rule is not None:
        return {"behavior": "allow", "updatedPermissions": [rule]}
    words = res.reason or res.note
    said = f"denied by {res.by or 'a human'}" + (f": {words}" if words else "")
    return {"behavior": "deny", "message": said}


def decide(workspace: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """Ask, wait up to ``[hooks] wait``, and answer; None: no decision."""

    if agentsession.driven():
        return None  # the supervisor speaks with this Claude: it asks (supervisor/dialogs.py)

    if not isinstance(event.get("tool_name"), str) or not Path(workspace).is_dir():
        return None
    config = config_mod.load(Path(workspace), lenient=True)
    log.setup(Workspace.of(config).events_file, Redactor(config.channels.secrets()),
              stream=sys.stderr, console_level="warning")  # fmt: skip
    event = {**event, "cwd": str(event.get("cwd") or workspace)}
    digest = call_hash(event["tool_name"], event.get("tool_input", {}), event["cwd"])
    register(config)
    hubs = Hubs()
    try:
        store = RequestStore(Workspace.of(config), hub=hubs.for_config(config))
        # Under `loopkit run` the agent has no channel secrets: the supervisor sends it.
        escalator = Escalator(config, store=store, agent_session=agentsession.inside())
        record = gate.approval(
            f"claude-permission:{digest}", lambda: request_for(config, event, digest),
            escalator=escalator,
        )  # fmt: skip
        record = wait_for(store, record.request_id, timeout=config.hooks.wait)
        answer = verdict(record, event)
        if not record.is_open:  # answered, or ended unanswered: the next dialog asks anew
            taken = store.update(record.request_id, used)
            # Acted on here: its block goes (no supervisor waits on an answer it must not
            # hand on to the next agent run).
            blockfile.remove_block(Workspace.of(config).blocked, taken)
        return answer
    finally:
        hubs.close()


def used(fresh: Request) -> bool:
    """An ending is given to one dialog (the next dialog for the same call asks again), and
    is acted on here: the supervisor does not hand it to the next agent run too."""
    if fresh.consumed_at:
        return False

    fresh.consumed_at = clock.iso_seconds()
    fresh.applied_at = fresh.applied_at or fresh.consumed_at
    return True
