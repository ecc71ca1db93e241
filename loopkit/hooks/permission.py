"""``loopkit hook claude permission-request``: Claude Code's own permission dialogs, asked
on the phone and in the inbox as an approval (SPEC section 18).

Per Claude Code's hooks reference ("PermissionRequest", "PermissionRequest decision
control", "Permission update entries"): the hook fires when a permission dialog is about to
be shown; its input holds ``tool_name``, ``tool_input`` and, optionally,
``permission_suggestions`` (the dialog's "always allow" entries). The answer is
``hookSpecificOutput.decision``: ``behavior`` ``allow`` (with ``updatedPermissions`` — a
suggestion echoed back is the user's "always allow") or ``deny`` (with ``message``, which
Claude reads). No output is no decision: Claude Code's own dialog stands.

The human is offered Allow / Deny, and "Always allow" when a suggestion adds an allow rule.
Under a supervisor that speaks with Claude in stream-json (``LOOPKIT_AGENT_DRIVER``) the hook
gives no decision at once: the same dialog then reaches the supervisor as a ``can_use_tool``
request, which asks without holding the turn open (:mod:`loopkit.supervisor.dialogs`).
The hook waits up to ``[hooks] wait``; no answer by then is no decision, and the request is
left for the human to see, not acted on. Nothing here ever fails the call.
"""

from __future__ import annotations

import json
import os
import sys

from loopkit import discover, readfile


def main(explicit: str | None = None) -> int:
    """The hook: the decision JSON on stdout, or nothing (no decision); always exit 0 — any
    trouble leaves Claude Code's own dialog standing, which allows nothing by itself."""

    try:
        event = readfile.json_document(sys.stdin.buffer.read(8 << 20).decode("utf-8", "replace"))
        if not isinstance(event, dict):
            raise ValueError("not a JSON object")
        if not isinstance(event.get("tool_name"), str):
            raise ValueError("no tool_name: not a permission request")
        cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else os.getcwd()
        from loopkit.hooks.dialog import decide  # the config, the store: once a call is asked

        answer = decide(discover.find_workspace(explicit, cwd=cwd), event)
    except Exception as exc:
        sys.stderr.write(
            f"loopkit: permission-request: no decision ({type(exc).__name__}: {exc})\n"
        )
        return 0
    if answer is not None:
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0
