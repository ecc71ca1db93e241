"""Codex's hooks: ``loopkit hook codex pretooluse`` and ``loopkit hook codex notify``.

Built to Codex's hook runner (openai/codex ``codex-rs/hooks/src/events/pre_tool_use.rs``,
``engine/output_parser.rs``, ``engine/command_runner.rs``; https://developers.openai.com/codex/hooks):

- stdin: ``session_id``, ``turn_id``, ``cwd``, ``hook_event_name``, ``model``,
  ``permission_mode``, ``tool_name``, ``tool_input``, ``tool_use_id``. The shell tool is
  ``Bash`` with ``{"command": …}``; file edits are ``apply_patch`` with the patch as
  ``command``; MCP tools are ``mcp__server__tool``. A patch the model runs through the
  shell (``apply_patch <<'EOF' …`` in a ``Bash`` command) is applied by Codex as the tool
  would be, so its files are checked against ``[gate] protect`` too.
- ``permissionDecision: "deny"`` needs a non-empty ``permissionDecisionReason`` (without one
  the output is invalid and the call runs); ``"ask"`` is unsupported, and so is ``"allow"``
  without ``updatedInput``: an approved call gets no decision, only a ``systemMessage``.
- exit 2 blocks with stderr as the reason (an empty stderr does not block); any other exit,
  a timeout included, lets the call run — so every failure here is exit 2 with one line.

``notify``: Codex runs its ``notify`` program with the JSON as the last argument
(``hooks/src/legacy_notify.rs``: ``type: "agent-turn-complete"``, ``thread-id``, ``turn-id``,
``cwd``, ``input-messages``, ``last-assistant-message``), stdin and stdout closed, not waited for.
"""

from __future__ import annotations

from loopkit.hooks.pretooluse import Dialect
from loopkit.hooks.pretooluse import main as gate

TYPE_CHECKING = False  # the no-match path imports neither typing nor re
if TYPE_CHECKING:
    from typing import Any

    from loopkit.hooks.pretooluse import Shower

# The lines of an apply_patch patch that name a file it touches.
_PATCH_PATH = r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$"


def patch_paths(patch: str) -> list[str]:
    """The files an ``apply_patch`` patch adds, updates, deletes or moves to."""
    import re

    found = re.finditer(_PATCH_PATH, patch, re.MULTILINE)
    return [(m.group(1) or m.group(2)).strip() for m in found]


_SHELL_PATCH = r"\bapply_?patch\b"  # the program Codex intercepts (and its old name)


class CodexDialect(Dialect):
    agent = "Codex"
    shell = ("Bash",)
    files = ("apply_patch",)
    shell_writes = (b"apply_patch", b"applypatch")

    def calls(self, tool_name: str, tool_input: Any) -> list[tuple[str, Any]]:
        if tool_name == "Bash" and isinstance(tool_input, dict):
            command = tool_input.get("command")
            if isinstance(command, list):  # an argv, as older releases sent it
                import shlex

                command = shlex.join(str(word) for word in command)
            found: list[tuple[str, Any]] = [("Bash", {"command": command})]
            import re

            if isinstance(command, str) and re.search(_SHELL_PATCH, command):
                found += [("Write", {"file_path": path}) for path in patch_paths(command)]
            return found
        if tool_name == "apply_patch" and isinstance(tool_input, dict):
            patch = str(tool_input.get("command") or tool_input.get("patch") or "")
            return [("Write", {"file_path": path}) for path in patch_paths(patch)]
        return [(tool_name, tool_input)]

    def shown(self, tool_name: str, tool_input: Any, show: Shower) -> list[str]:
        calls = self.calls(tool_name, tool_input)
        if tool_name == "apply_patch" or (tool_name == "Bash" and len(calls) > 1):
            written = calls if tool_name == "apply_patch" else calls[1:]
            # the patch's files, not its text: each as a Write of it shows its path
            return ["apply_patch", *(show(name, given)[1] for name, given in written)]
        name, given = calls[0]
        return super().shown(name, given, show)

    def answer(self, decision: str, reason: str) -> dict[str, Any] | None:
        if decision == "allow":
            return {"systemMessage": f"loopkit: {reason}"}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason.strip() or "denied by loopkit's gate",
            }
        }


CODEX = CodexDialect()


def main(explicit: str | None = None) -> int:
    return gate(explicit, CODEX)


def notice(payload: dict[str, Any]) -> dict[str, Any] | None:
    """Codex's ``agent-turn-complete`` as the Claude notification's event (an idle prompt:
    Codex waits for the human), or None for anything else."""
    if payload.get("type") != "agent-turn-complete":
        return None
    last = str(payload.get("last-assistant-message") or "").strip().splitlines()
    return {
        "notification_type": "idle_prompt",
        "session_id": str(payload.get("thread-id") or "codex"),
        "message": "finished its turn" + (f": {last[0][:200]}" if last else ""),
    }
