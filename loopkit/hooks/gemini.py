"""Gemini CLI's BeforeTool hook: ``loopkit hook gemini beforetool``.

Built to Gemini CLI's hook runner (google-gemini/gemini-cli ``packages/core/src/hooks/
hookRunner.ts``, ``hookAggregator.ts``, ``types.ts``, ``core/coreToolHookTriggers.ts``;
https://geminicli.com/docs/hooks/reference):

- stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` (``BeforeTool``),
  ``timestamp``, ``tool_name``, ``tool_input``. The shell tool is ``run_shell_command``
  (``command``), the file tools ``write_file`` and ``replace`` (``file_path``); MCP tools are
  ``mcp_<server>_<tool>``.
- exit 0: stdout is JSON; ``decision: "deny"`` (or ``"block"``) with ``reason`` stops the
  call and the reason goes to the model; anything else lets it run.
- exit 2 — and any exit but 0 and 1 — denies with stderr as the reason; exit 1 is a warning
  and the call runs; so does a timeout (``timeout`` in *milliseconds*, default 60000).
"""

from __future__ import annotations

from loopkit.hooks.pretooluse import Dialect
from loopkit.hooks.pretooluse import main as gate

TYPE_CHECKING = False  # the no-match path imports no typing
if TYPE_CHECKING:
    from typing import Any

    from loopkit.hooks.pretooluse import Shower

_RULE_NAMES = {"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit"}


class GeminiDialect(Dialect):
    agent = "Gemini CLI"
    event = "BeforeTool"
    shell = ("run_shell_command",)
    files = ("write_file", "replace")

    def calls(self, tool_name: str, tool_input: Any) -> list[tuple[str, Any]]:
        return [(_RULE_NAMES.get(tool_name, tool_name), tool_input)]

    def shown(self, tool_name: str, tool_input: Any, show: Shower) -> list[str]:
        shown = super().shown(*self.calls(tool_name, tool_input)[0], show)
        return [tool_name, *shown[1:]] if tool_name in self.files else shown

    def answer(self, decision: str, reason: str) -> dict[str, Any] | None:
        if decision == "allow":
            return {"decision": "allow", "systemMessage": f"loopkit: {reason}"}
        return {"decision": "deny", "reason": reason.strip() or "denied by loopkit's gate"}


GEMINI = GeminiDialect()


def main(explicit: str | None = None) -> int:
    return gate(explicit, GEMINI)
