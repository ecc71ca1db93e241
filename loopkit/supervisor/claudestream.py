"""Claude Code run the way its SDK runs it (SPEC section 23).

An agent command that reads stream-json (``claude -p --input-format stream-json
--output-format stream-json --verbose --permission-prompt-tool stdio …``) is spoken with
rather than only watched: the supervisor writes the turn's prompt as a ``user`` message,
reads every event (:mod:`~loopkit.supervisor.eventstream`), answers Claude's
``can_use_tool`` requests — its own questions and permission dialogs, asked of the human
(:mod:`~loopkit.supervisor.dialogs`) — and, on the ``result`` that ends the turn, closes
stdin so Claude exits, as the SDK's one-shot query does
(anthropics/claude-agent-sdk-python ``_internal/query.py``: ``wait_for_result_and_end_input``).
That is what makes ``AskUserQuestion`` and permission dialogs happen at all in a headless
run: plain ``claude -p`` offers no ``AskUserQuestion`` and shows no dialog.

The console and the iteration log get the turn as text (what Claude says, each tool call,
each failed call, the result's line), not the raw events; the result itself is read from
its event.
"""

from __future__ import annotations

import shlex

from loopkit import agentresult
from loopkit.log import get_logger
from loopkit.message import clean, fold
from loopkit.supervisor.eventstream import EventStream

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.agentresult import Result
    from loopkit.config import Command
    from loopkit.supervisor.dialogs import Dialogs
    from loopkit.supervisor.runner import AgentInput

log = get_logger("loopkit.supervisor")


def speaks_stream_json(command: Command | None) -> bool:
    """Whether ``command`` starts an agent that reads stream-json on stdin
    (``--input-format stream-json`` or ``--input-format=stream-json`` among its words)."""
    if command is None:
        return False
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return False
    else:
        words = list(command)
    for n, word in enumerate(words):
        if word == "--input-format=stream-json":
            return True
        if word == "--input-format" and words[n + 1 : n + 2] == ["stream-json"]:
            return True
    return False


class ClaudeStream:
    """One run of Claude in stream-json: a :class:`~loopkit.supervisor.runner.Conversation`.

    ``prompt`` is sent as the turn's user message; ``dialogs`` answers ``can_use_tool``
    (None: every such request is denied — nobody can be asked). After the run,
    ``result`` is the turn's result (None: it printed none), ``session_id`` the
    session, ``asked`` the requests its dialogs raised."""

    def __init__(self, prompt: str, dialogs: Dialogs | None = None) -> None:
        self.prompt = prompt
        self.dialogs = dialogs
        self.events = EventStream(self._print)
        self.events.listen(self._on_event)
        self.result: Result | None = None
        self.session_id: str | None = None
        self._say: Callable[[bytes], None] | None = None

    @property
    def asked(self) -> list[str]:
        return self.dialogs.asked if self.dialogs else []

    # -- the runner's side ---------------------------------------------------------------

    def opened(self, stdin: AgentInput, say: Callable[[bytes], None]) -> None:
        self.events.stdin = stdin
        self._say = say
        self.events.send_user(self.prompt)

    def received(self, chunk: bytes) -> None:
        self.events.feed(chunk)

    def closed(self) -> None:
        self.events.end()

    # -- events --------------------------------------------------------------------------

    def _print(self, raw: bytes) -> None:
        if self._say is not None:
            self._say(raw)

    def _line(self, text: str) -> None:
        self._print(f"claude: {text}\n".encode())

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.session_id = agentresult.session_id(event.get("session_id")) or self.session_id
            self._line(f"session {self.session_id} ({event.get('permissionMode', '?')} mode)")
        elif kind == "assistant":
            self._assistant(event)
        elif kind == "user":
            self._tool_results(event)
        elif kind == "control_request":
            self._control(event)
        elif kind == "result":
            self._result(event)

    def _assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                for line in block["text"].splitlines() or [""]:
                    self._line(clean(line))
            elif block.get("type") == "tool_use":
                self._line(f"→ {clean(str(block.get('name')))} {_brief(block.get('input'))}")

    def _tool_results(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("is_error")
            ):
                self._line(f"✗ {fold(clean(_text_of(block.get('content'))), 200)}")

    def _control(self, event: dict[str, Any]) -> None:
        request_id = event.get("request_id")
        request = event.get("request")
        if not isinstance(request_id, str) or not isinstance(request, dict):
            return
        if request.get("subtype") != "can_use_tool":
            self.events.refuse(request_id, f"loopkit serves no {request.get('subtype')!r}")
            return
        if self.dialogs is None:
            answer: dict[str, Any] = {"behavior": "deny", "message": "nobody to ask"}
        else:
            answer = self.dialogs.can_use_tool(request, self.session_id)
        self.events.respond(request_id, answer)
        tool = clean(str(request.get("tool_name")))
        if answer["behavior"] == "allow":
            self._line(f"{tool}: allowed by a human's answer")
        else:
            self._line(f"{tool}: {fold(clean(str(answer.get('message'))), 200)}")

    def _result(self, event: dict[str, Any]) -> None:
        self.result = agentresult.from_event(event)
        self.events.close()  # the turn is over: Claude exits
        if self.result is None:
            return
        result = self.result
        self.session_id = result.session_id or self.session_id
        failure = result.failure()
        how = (
            f"API failure: {failure[1]}"
            if failure
            else (result.subtype or "done") + (" (error)" if result.is_error else "")
        )
        cost = f", ${result.total_cost_usd:.4f}" if result.total_cost_usd is not None else ""
        self._line(f"result: {how} after {result.num_turns or 0} turn(s){cost}")


def _brief(given: object) -> str:
    if isinstance(given, dict):
        for key in ("command", "file_path", "notebook_path", "pattern", "url"):
            if isinstance(given.get(key), str):
                return fold(clean(given[key]), 160)
        if isinstance(given.get("questions"), list):
            asked = [q.get("question") for q in given["questions"] if isinstance(q, dict)]
            return fold(clean(" / ".join(str(q) for q in asked)), 160)
    return ""


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text")) for b in content if isinstance(b, dict) and "text" in b)
    return ""
