"""An agent's event stream: JSON lines read from its stdout, JSON lines written to its stdin.

Claude Code's ``--output-format stream-json`` prints one JSON object a line (``system``,
``assistant``, ``user``, ``control_request``, ``result``, …) and, with ``--input-format
stream-json``, reads one a line (``user`` messages, ``control_response``,
``control_request`` such as an interrupt) — the protocol its SDKs speak
(anthropics/claude-agent-sdk-python ``_internal/query.py``; Claude Code's headless docs,
https://code.claude.com/docs/en/headless, "Streaming JSON input"). This module is that
transport and nothing else: it splits the bytes into events for whoever listens and puts a
message on the wire. What an event means is its listeners' business
(:mod:`~loopkit.supervisor.claudestream`), so watching a turn live, writing to it mid-turn
and interrupting it are listeners and calls of this same stream.

A line that is not a JSON object (a stray print) is handed to ``text`` as it is; a line
longer than :data:`MAX_LINE` is not decoded (said, then skipped up to its end).
"""

from __future__ import annotations

import json
import uuid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.supervisor.runner import AgentInput

MAX_LINE = 32 * 1024 * 1024  # a tool result can be long; a runaway line is not kept whole


class EventStream:
    """Reads events from the agent's stdout (:meth:`feed`), writes messages to its stdin."""

    def __init__(self, text: Callable[[bytes], None]) -> None:
        self._buffer = bytearray()
        self._skipping = False
        self._text = text
        self._listeners: list[Callable[[dict[str, Any]], None]] = []
        self.stdin: AgentInput | None = None

    def listen(self, listener: Callable[[dict[str, Any]], None]) -> None:
        """Call ``listener`` with every event, in order, after those added before it."""
        self._listeners.append(listener)

    def feed(self, chunk: bytes) -> None:
        self._buffer += chunk
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._skipping:
                self._skipping = False
                continue
            self._line(line)
        if len(self._buffer) > MAX_LINE:
            self._text(f"[a line of {len(self._buffer)}+ bytes from the agent, not read]\n"
                       .encode())  # fmt: skip
            self._buffer.clear()
            self._skipping = True

    def end(self) -> None:
        """The stream ended: a last line without its newline is read too."""
        if self._buffer and not self._skipping:
            self._line(bytes(self._buffer))
        self._buffer.clear()

    def _line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            self._text(line + b"\n")
            return
        for listener in self._listeners:
            listener(event)

    # -- writing -------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.stdin is not None:
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
            self.stdin.write(line.encode())

    def send_user(self, text: str, session_id: str = "") -> None:
        """A user message: the turn's prompt, or words for the agent mid-turn."""
        self.send({"type": "user", "session_id": session_id, "parent_tool_use_id": None,
                   "message": {"role": "user", "content": text}})  # fmt: skip

    def respond(self, request_id: str, response: dict[str, Any]) -> None:
        """The answer to one of the agent's ``control_request``s."""
        self.send({"type": "control_response",
                   "response": {"subtype": "success", "request_id": request_id,
                                "response": response}})  # fmt: skip

    def refuse(self, request_id: str, error: str) -> None:
        """A ``control_request`` this side does not serve."""
        self.send({"type": "control_response",
                   "response": {"subtype": "error", "request_id": request_id,
                                "error": error}})  # fmt: skip

    def interrupt(self) -> None:
        """Ask the agent to stop its turn (the SDK's ``interrupt`` control request)."""
        self.send({"type": "control_request", "request_id": f"loopkit-{uuid.uuid4().hex[:12]}",
                   "request": {"subtype": "interrupt"}})  # fmt: skip

    def close(self) -> None:
        """No more input: the agent ends once its turn is over."""
        if self.stdin is not None:
            self.stdin.close()
