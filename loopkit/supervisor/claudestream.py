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

import functools
import shlex

from loopkit import agentresult
from loopkit.config import StuckConfig
from loopkit.log import get_logger
from loopkit.message import clean, fold
from loopkit.supervisor.turnwatch import TurnWatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.agentresult import Result
    from loopkit.config import Command
    from loopkit.supervisor.dialogs import Dialogs
    from loopkit.workspace.steer import Note

log = get_logger("loopkit.supervisor")


def command_words(command: Command) -> list[str]:
    """``command``'s words as the shell splits them ([] when it cannot): a command line
    is split once, not at every run of every iteration."""
    if isinstance(command, str):
        return list(_split(command))
    return list(command)


@functools.lru_cache(maxsize=32)
def _split(command: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(command))
    except ValueError:
        return ()


def speaks_stream_json(command: Command | None) -> bool:
    """Whether ``command`` starts an agent that reads stream-json on stdin
    (``--input-format stream-json`` or ``--input-format=stream-json`` among its words)."""
    if command is None:
        return False
    words = command_words(command)
    for n, word in enumerate(words):
        if word == "--input-format=stream-json":
            return True
        if word == "--input-format" and words[n + 1 : n + 2] == ["stream-json"]:
            return True
    return False


class ClaudeStream(TurnWatch):
    """One run of Claude Code in stream-json: a :class:`~loopkit.supervisor.turnwatch.TurnWatch`.

    ``prompt`` is sent as the turn's user message (None: Claude got its prompt on its
    command line and reads nothing — its events are only watched); ``dialogs`` answers
    ``can_use_tool`` (None: every such request is denied — nobody can be asked). After the
    run, ``result`` is the turn's result (None: it printed none), ``session_id`` the
    session, ``asked`` the requests its dialogs raised."""

    agent = "claude"
    title = "Claude Code"

    def __init__(
        self,
        prompt: str | None,
        dialogs: Dialogs | None = None,
        *,
        settings: StuckConfig | None = None,
        **watch: Any,
    ) -> None:
        super().__init__(settings or StuckConfig(), **watch)
        self.prompt = prompt
        self.writes = prompt is not None
        self.dialogs = dialogs
        self.result: Result | None = None
        self._messages: set[str] = set()  # the model responses seen (one may span events)

    @property
    def asked(self) -> list[str]:
        return self.dialogs.asked if self.dialogs else []

    @property
    def takes_messages(self) -> bool:
        stdin = self.events.stdin
        return (self.writes and self.result is None and stdin is not None
                and not stdin.closing and not stdin.broken)  # fmt: skip

    def _begin(self) -> None:
        if self.prompt is not None:
            self.events.send_user(self.prompt)

    def interrupt_own(self) -> bool:
        if not self.takes_messages:
            return False
        self.events.interrupt()  # Claude stops the call it runs (in its own session) too
        return True

    def deliver(self, note: Note) -> bool:
        self.events.send_user(f"[loopkit] {note.by} (via {note.via}) says: {note.text}",
                              self.session_id or "")  # fmt: skip
        return True

    # -- events --------------------------------------------------------------------------

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.session(agentresult.session_id(event.get("session_id")))
            self.line(f"session {self.session_id} ({event.get('permissionMode', '?')} mode)")
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
        if not isinstance(message, dict):
            return
        key = message.get("id")
        if not isinstance(key, str) or key not in self._messages:
            if isinstance(key, str):
                self._messages.add(key)
            self.turn()
            usage = message.get("usage")
            if isinstance(usage, dict):
                self.usage(usage.get("input_tokens"), usage.get("output_tokens"))
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.words(block["text"])
            elif block.get("type") == "tool_use":
                call_id = block.get("id")
                self.tool_started(str(call_id), str(block.get("name")), block.get("input"))

    def _tool_results(self, event: dict[str, Any]) -> None:
        message = event.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self.tool_finished(str(block.get("tool_use_id")), _text_of(block.get("content")),
                                   failed=bool(block.get("is_error")))  # fmt: skip

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
            self.line(f"{tool}: allowed by a human's answer")
        else:
            self.line(f"{tool}: {fold(clean(str(answer.get('message'))), 200)}")

    def _result(self, event: dict[str, Any]) -> None:
        self.result = agentresult.from_event(event)
        self.events.close()  # the turn is over: Claude exits
        if self.mailbox is not None:
            self.mailbox.turn_ended("the turn had ended")
        self._record(takes_messages=False)
        if self.result is None:
            return
        result = self.result
        self.session(result.session_id)
        self.spent(result.total_cost_usd)
        failure = result.failure()
        how = (
            f"API failure: {failure[1]}"
            if failure
            else (result.subtype or "done") + (" (error)" if result.is_error else "")
        )
        cost = f", ${result.total_cost_usd:.4f}" if result.total_cost_usd is not None else ""
        self.line(f"result: {how} after {result.num_turns or 0} turn(s){cost}")


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text")) for b in content if isinstance(b, dict) and "text" in b)
    return ""
