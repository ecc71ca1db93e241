"""A gated tool call (``[gate] rules``) asks for an approval bound to that exact call.

The binding is the SHA-256 of tool name + what the call runs + folder, as ``loopkit gate``
binds argv + folder, and an approval is used once (:func:`loopkit.escalation.gate.approval`,
:func:`~loopkit.escalation.gate.consume`: the same code). Under ``loopkit run`` the agent's
call is denied at once with "waiting for a human's approval", the request stands as the
loop's block, and the supervisor waits on it when the agent's turn ends; the next
iteration's identical call finds the approval and is allowed, once. Outside a supervisor the
hook itself waits up to ``[hooks] wait`` (540 s, under Claude Code's 600 s hook timeout).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from loopkit import agentsession, log
from loopkit import config as config_mod
from loopkit.escalation import gate
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.home import Registry
from loopkit.hooks.rules import FILE_TOOLS
from loopkit.message import clean, fold
from loopkit.redact import Redactor, mask_script
from loopkit.requests.answer import GATE_OPTIONS
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.escalation import allow
    from loopkit.requests.record import Request

WAITING = "waiting for a human's approval: loopkit will resume you when it is given"


# What a call of each tool the agents share runs (Claude Code's, Codex's and Gemini CLI's
# tool inputs): the rest — a `description`, a timeout, running in the background — is the
# agent's words about the call, and may change when the same call is made again. A tool not
# named here (an MCP tool, whose every argument may matter) is bound to its whole input.
RUNS: dict[str, tuple[str, ...]] = {
    "Bash": ("command",),
    "Write": ("file_path", "content"),
    "Edit": ("file_path", "old_string", "new_string", "replace_all"),
    "MultiEdit": ("file_path", "edits"),
    "NotebookEdit": ("notebook_path", "cell_id", "new_source", "cell_type", "edit_mode"),
    "AskUserQuestion": ("questions",),
    "apply_patch": ("command", "patch", "input"),
    "run_shell_command": ("command", "dir_path", "directory"),
    "write_file": ("file_path", "content"),
    "replace": ("file_path", "old_string", "new_string", "expected_replacements",
                "allow_multiple"),
}  # fmt: skip


def what_runs(tool_name: str, tool_input: Any) -> Any:
    """The part of ``tool_input`` that says what the call does (:data:`RUNS`)."""
    keys = RUNS.get(tool_name)
    if keys is None or not isinstance(tool_input, dict):
        return tool_input
    return {key: tool_input[key] for key in keys if key in tool_input}


def call_hash(tool_name: str, tool_input: Any, cwd: str) -> str:
    """The SHA-256 an approval is bound to: the tool, what it runs, the folder — never the
    agent's description of it (a retry reworded is the same call)."""
    canonical = {"tool_name": tool_name, "tool_input": what_runs(tool_name, tool_input),
                 "cwd": cwd}  # fmt: skip
    encoded = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


SHELL_TOOLS = ("Bash", "run_shell_command")


def shown_call(tool_name: str, tool_input: Any) -> list[str]:
    """The call as the human sees it: a shell command as its text — exactly as it runs,
    ``>`` and quotes untouched — with its secrets masked; a file tool's name and path; any
    other tool's name."""
    if tool_name in SHELL_TOOLS and isinstance(tool_input, dict):
        return [clean(mask_script(str(tool_input.get("command", ""))))]
    key = FILE_TOOLS.get(tool_name)
    if key and isinstance(tool_input, dict):
        return [tool_name, clean(str(tool_input.get(key, "")))]
    return [clean(tool_name)]


def _request(
    config: config_mod.Config,
    event: dict[str, Any],
    hit: str,
    digest: str,
    *,
    agent: str = "Claude",
    shown: list[str] | None = None,
    standing: allow.Wanted | None = None,
) -> Request:
    tool_name, tool_input, cwd = event["tool_name"], event.get("tool_input", {}), event["cwd"]
    shown = shown if shown is not None else shown_call(tool_name, tool_input)
    text = " ".join(shown)
    room = 120 - len(f"Approve {agent}'s ``?")
    hook = "Claude Code" if agent == "Claude" else agent
    binding: dict[str, Any] = {
        "argv": shown,
        "command": text,  # as shown, never re-quoted: what the human approves
        "cwd": cwd,
        "sha256": digest,
        "tool": tool_name,
        "rule": hit,
        "session": str(event.get("session_id") or ""),
        "agent": agent,
    }
    if standing is not None:  # "Allow always here" is offered: what its rule will hold
        binding["standing"] = standing.to_dict()
    request = gate.approval_request(
        config,
        key=f"hook:{digest}",
        prompt=f"Approve {agent}'s `{fold(text, room)}`?",
        situation=f"Command: {text}\nFolder: {cwd}\nTool: {tool_name} (rule {hit})",
        policy=f"loopkit's {hook} hook: this exact tool call runs only after its approval",
        trigger=f"{agent.split()[0].lower()}-hook",
        attempted=f"nothing: {hook} holds the call until it is approved",
        binding=binding,
    )
    if standing is not None:
        request.options = list(GATE_OPTIONS)
    return request


def register(config: config_mod.Config) -> None:
    """This workspace in ``LOOPKIT_HOME`` (SPEC sections 10 and 26), as ``run`` and
    ``escalate`` register theirs: a hook's question in a workspace that never ran ``loopkit
    run`` is then answered from the phone (``loopkit serve``), the inbox and ``reply`` in
    another folder like any other. Called only once a call is held — one that no rule holds
    registers nothing, so the hook's start-up stays as it was (SPEC §20) — and a refresh of an
    entry already there writes without an fsync. A home that cannot be written is logged,
    never a lost question."""
    try:
        Registry().register(config.workspace, Workspace.of(config).repo_name())
    except OSError as exc:
        log.get_logger("loopkit.hooks").warning(
            "unregistered",
            msg=f"cannot register this workspace in LOOPKIT_HOME ({exc.strerror}): its "
            "question reaches the inbox and `loopkit serve` only once `loopkit run` has run here",
        )


def _output(decision: str, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def decide(workspace: str, event: dict[str, Any], hit: str) -> dict[str, Any]:
    """Claude Code's answer for a gated call: allow (approved, once) or deny (with why)."""
    return _output(*verdict(workspace, event, hit))


def verdict(
    workspace: str,
    event: dict[str, Any],
    hit: str,
    *,
    agent: str = "Claude",
    shown: list[str] | None = None,
    standing: allow.Wanted | None = None,
) -> tuple[str, str]:
    """``("allow", how)`` for a call approved (once), else ``("deny", why)``; ``agent``
    names the asker in the question, ``shown`` the call as the human sees it; ``standing``:
    what a rule of ``allow.toml`` would hold for it ("Allow always here" is offered), None
    when none may be offered. Each decision is a ``gate_decision`` event (audited)."""
    if not Path(workspace).is_dir():
        # A session folder deleted meanwhile: nowhere to ask, and nothing is made there.
        return "deny", f"the call's folder {workspace} does not exist; nothing asked"
    config = config_mod.load(Path(workspace))
    # stdout is the hook's answer to the agent: events go to the file and to stderr only.
    log.setup(Workspace.of(config).events_file, Redactor(config.channels.secrets()),
              stream=sys.stderr, console_level="warning", ship="detached")  # fmt: skip
    event = {**event, "cwd": event.get("cwd") or workspace}
    digest = call_hash(event["tool_name"], event.get("tool_input", {}), event["cwd"])
    decided = _verdict(config, event, hit, digest, agent=agent, shown=shown, standing=standing)
    _log.info(
        "gate_decision",
        decision=decided[0],
        reason=decided[1],
        request_id=decided[2],
        tool=event["tool_name"],
        command=" ".join(shown or shown_call(event["tool_name"], event.get("tool_input", {}))),
        gate_rule=hit,
        agent=agent,
        workspace=str(config.workspace),
        msg=f"{agent}'s call: {decided[0]} ({decided[1]})",
        _console=False,
    )
    return decided[0], decided[1]


_log = log.get_logger("loopkit.gate")


def _verdict(
    config: config_mod.Config,
    event: dict[str, Any],
    hit: str,
    digest: str,
    *,
    agent: str,
    shown: list[str] | None,
    standing: allow.Wanted | None,
) -> tuple[str, str, str | None]:
    """The decision, its reason and the approval request it rests on."""
    register(config)
    hubs = Hubs()  # this hook is its own process: what it builds, it closes
    try:
        store = RequestStore(Workspace.of(config), hub=hubs.for_config(config))
        supervised = agentsession.inside()
        escalator = Escalator(config, store=store, agent_session=supervised)
        record = gate.approval(
            f"hook:{digest}",
            lambda: _request(
                config, event, hit, digest, agent=agent, shown=shown, standing=standing
            ),
            escalator=escalator,
            wait=not supervised,
            timeout=config.hooks.wait,
        )
        found = gate.consume(escalator.store, record, digest)
        asked = record.request_id
        if found.state == "approved":
            return "allow", found.reason, asked
        if found.state == "open":
            if supervised:
                return "deny", WAITING, asked
            waited = f"no human approved it within {config.hooks.wait:g} s"
            return "deny", f"{waited} (requests/{record.request_id}.json stays open)", asked
        return "deny", found.reason, asked
    finally:
        hubs.close()
