"""Which agent runs are watched as they go, and how Codex's and Gemini CLI's events read
(SPEC section 24).

:func:`stream_for` picks the :class:`~loopkit.supervisor.turnwatch.TurnWatch` for an agent
command, by its words:

- a command that reads stream-json (``--input-format stream-json``) is Claude Code spoken
  with (:class:`~loopkit.supervisor.claudestream.ClaudeStream`: prompt, dialogs, messages
  mid-turn, its own interrupt);
- one that prints events — ``--output-format stream-json`` (``-o stream-json``) or
  ``--json`` — is watched: Claude Code's own events (only read), Codex's ``exec --json``
  (:class:`CodexStream`) or Gemini CLI's (:class:`GeminiStream`), told apart by the
  program's name among the words (``claude``, ``codex``, ``gemini``; ``npx
  @google/gemini-cli`` is Gemini);
- any other runs as before: its output is text, nothing is watched.

The events, as the installed CLIs print them (checked against Codex 0.171.0 and Gemini CLI
0.61.0, and their references):

- Codex ``exec --json`` (developers.openai.com/codex, "Non-interactive mode"):
  ``thread.started`` (``thread_id``), ``turn.started``, ``item.started`` /
  ``item.updated`` / ``item.completed`` with an ``item`` (``id``, ``type``:
  ``command_execution`` with ``command``, ``aggregated_output``, ``exit_code``,
  ``status``; ``agent_message`` with ``text``; ``file_change`` with ``changes``;
  ``mcp_tool_call`` with ``server``, ``tool``, ``arguments``; ``web_search`` with
  ``query``; ``reasoning``; ``todo_list``; ``error`` with ``message``), ``turn.completed``
  (``usage``: ``input_tokens``, ``output_tokens``, …), ``turn.failed`` (``error``) and
  ``error``.
- Gemini CLI ``--output-format stream-json`` (geminicli.com/docs/cli/headless): ``init``
  (``session_id``, ``model``), ``message`` (``role``, ``content``, ``delta``: an
  assistant's words come in pieces), ``tool_use`` (``tool_name``, ``tool_id``,
  ``parameters``), ``tool_result`` (``tool_id``, ``status``, ``output`` or ``error``),
  ``error`` (``severity``, ``message``) and ``result`` (``status``, ``stats`` with
  ``input_tokens``, ``output_tokens``, ``tool_calls``).

Neither takes input mid-turn: a message for the turn becomes the next run's guidance, and a
runaway is stopped with SIGINT, then the group.
"""

from __future__ import annotations

import os

from loopkit import agentresult
from loopkit.supervisor.claudestream import ClaudeStream, command_words, speaks_stream_json
from loopkit.supervisor.turnwatch import TurnWatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.config import Command, StuckConfig
    from loopkit.supervisor.dialogs import Dialogs

AGENTS = ("claude", "codex", "gemini")


def _prints_events(words: list[str]) -> bool:
    for n, word in enumerate(words):
        if word in ("--json", "--experimental-json", "--output-format=stream-json",
                    "-o=stream-json"):  # fmt: skip
            return True
        if word in ("--output-format", "-o") and words[n + 1 : n + 2] == ["stream-json"]:
            return True
    return False


def agent_of(command: Command | None) -> str | None:
    """The agent whose events ``command`` prints (``claude``, ``codex``, ``gemini``), by its
    program's name among its words; None: its output is not watched."""
    if command is None:
        return None
    words = command_words(command)
    if not (speaks_stream_json(command) or _prints_events(words)):
        return None
    for word in words:
        name = os.path.basename(word.rstrip("/")).lstrip("@")
        for agent in AGENTS:
            if name == agent or name.startswith((f"{agent}-", f"{agent}.")):
                return agent
    return "claude" if speaks_stream_json(command) else None


def stream_for(
    command: Command,
    *,
    prompt: str | None,
    dialogs: Dialogs | None,
    settings: StuckConfig,
    **watch: Any,
) -> TurnWatch | None:
    """The watch for a run of ``command`` (None: not watched). ``prompt`` is the turn's
    message for an agent that reads stream-json; ``watch``: :class:`TurnWatch`'s keywords."""
    if speaks_stream_json(command):
        return ClaudeStream(prompt, dialogs, settings=settings, **watch)
    agent = agent_of(command)
    if agent == "claude":
        return ClaudeStream(None, dialogs, settings=settings, **watch)
    if agent == "codex":
        return CodexStream(settings, **watch)
    if agent == "gemini":
        return GeminiStream(settings, **watch)
    return None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class CodexStream(TurnWatch):
    """``codex exec --json``, watched."""

    agent = "codex"
    title = "Codex"

    def __init__(self, settings: StuckConfig, **watch: Any) -> None:
        super().__init__(settings, **watch)
        self._seen: set[str] = set()  # the items started (a call is counted once)

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in ("thread.started", "thread.resumed"):
            self.session(agentresult.session_id(event.get("thread_id")))
            self.line(f"session {self.session_id}")
        elif kind == "turn.started":
            self.turn()
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if isinstance(item, dict):
                self._item(item, done=kind == "item.completed")
        elif kind == "turn.completed":
            usage = event.get("usage")
            if isinstance(usage, dict):
                self.usage(usage.get("input_tokens"), usage.get("output_tokens"))
            self.line(f"result: turn completed, {self.tokens['input']} tokens in, "
                      f"{self.tokens['output']} out")  # fmt: skip
        elif kind in ("turn.failed", "error"):
            error = event.get("error")
            said = error.get("message") if isinstance(error, dict) else event.get("message")
            self.line(f"{'turn failed' if kind == 'turn.failed' else 'error'}: {_text(said)}")

    def _item(self, item: dict[str, Any], *, done: bool) -> None:
        kind = item.get("type")
        item_id = str(item.get("id"))
        call = _call_of(item)
        if call is not None:
            if item_id not in self._seen:
                self._seen.add(item_id)
                self.tool_started(item_id, *call)
            if done:
                failed = item.get("status") == "failed" or (
                    isinstance(item.get("exit_code"), int) and item["exit_code"] != 0
                )
                said = _text(item.get("aggregated_output")) or _text(
                    (item.get("error") or {}).get("message")
                    if isinstance(item.get("error"), dict)
                    else None
                )
                self.tool_finished(item_id, said, failed=failed)
        elif done and kind == "agent_message":
            self.words(_text(item.get("text")))
        elif done and kind == "error":
            self.line(f"error: {_text(item.get('message'))}")


def _call_of(item: dict[str, Any]) -> tuple[str, Any] | None:
    """A Codex item that is a tool call: its tool's name and input, else None."""
    kind = item.get("type")
    if kind == "command_execution":
        return "shell", {"command": _text(item.get("command"))}
    if kind == "mcp_tool_call":
        return f"{_text(item.get('server'))}.{_text(item.get('tool'))}", item.get("arguments")
    if kind == "web_search":
        return "web_search", {"query": _text(item.get("query"))}
    if kind == "file_change":
        changes = item.get("changes")
        paths = [c.get("path") for c in changes if isinstance(c, dict)] if isinstance(
            changes, list) else []  # fmt: skip
        return "apply_patch", {"path": " ".join(str(p) for p in paths), "changes": changes}
    return None


class GeminiStream(TurnWatch):
    """``gemini --output-format stream-json``, watched."""

    agent = "gemini"
    title = "Gemini CLI"

    def __init__(self, settings: StuckConfig, **watch: Any) -> None:
        super().__init__(settings, **watch)
        self._words: list[str] = []  # an assistant's message, in the pieces it came in

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            if not self._words:
                self.turn()
            self._words.append(_text(event.get("content")))
            return
        self._said()
        if kind == "init":
            self.session(agentresult.session_id(event.get("session_id")))
            self.line(f"session {self.session_id} ({_text(event.get('model')) or '?'})")
        elif kind == "tool_use":
            self.tool_started(str(event.get("tool_id")), _text(event.get("tool_name")),
                              event.get("parameters"))  # fmt: skip
        elif kind == "tool_result":
            error = event.get("error")
            said = _text(event.get("output")) or (
                _text(error.get("message")) if isinstance(error, dict) else ""
            )
            self.tool_finished(str(event.get("tool_id")), said,
                               failed=event.get("status") != "success")  # fmt: skip
        elif kind == "error":
            self.line(f"{_text(event.get('severity')) or 'error'}: {_text(event.get('message'))}")
        elif kind == "result":
            stats = event.get("stats")
            if isinstance(stats, dict):
                self.usage(stats.get("input_tokens"), stats.get("output_tokens"))
            error = event.get("error")
            why = f": {_text(error.get('message'))}" if isinstance(error, dict) else ""
            self.line(f"result: {_text(event.get('status')) or '?'}{why}")

    def closed(self) -> None:
        self._said()
        super().closed()

    def _said(self) -> None:
        if self._words:
            text, self._words = "".join(self._words), []
            self.words(text)
