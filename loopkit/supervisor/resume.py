"""After an answer, the agent's own session goes on (``[loop] resume``, SPEC section 18).

When the block the loop waited on was raised during the agent's turn — a gated call its
PreToolUse hook denied with "waiting for a human's approval", Claude's own question or
permission dialog, the agent's ``escalate`` — and ``[loop] resume`` is set, the next
iteration runs ``resume`` with ``{session_id}`` filled in instead of a fresh ``agent``: the
session that asked hears the answer (:func:`plan`). The session id is the one bound to the
request by the hook (``session`` in its binding), else the one the agent's last result
named.

The prompt on stdin says the decision in a line per answer: ``approved: run it again`` or
``rejected: <the human's words>`` for a gated call — the hook then allows the identical
call once, or denies it with those words — and the answer for the agent's own question.
Claude's questions need no prompt where the hook defers them (``claude -p``): fired again
for the same call, it hands Claude the answers. A session loopkit speaks with in stream-json
(:mod:`~loopkit.supervisor.claudestream`) gets the prompt as its turn's message instead of
on stdin, its questions' answers in it, and a permission dialog's outcome like a gated
call's. A turn the supervisor stopped inside (a runaway: ``[stuck] same_call``,
``ping_pong``, ``silent``, SPEC section 24) goes on in its session with the human's words.
The supervisor's other blocks (verify failures, …) start a fresh run, as before.

A session that does not resume (:func:`not_resumed`) falls back to a fresh ``agent`` run
with ``LOOPKIT_DECISION``; the iteration says so in the log and in ``status``.
"""

from __future__ import annotations

import shlex
from collections import deque

from loopkit import agentresult, atomicfile
from loopkit.datarecord import record
from loopkit.errors import LoopkitError
from loopkit.message import fold
from loopkit.requests.answer import outcome_of
from loopkit.requests.models import Resolution
from loopkit.supervisor.claudestream import speaks_stream_json
from loopkit.supervisor.stuck_counters import in_turn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from loopkit.agentresult import Result
    from loopkit.config import Command
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore
    from loopkit.supervisor.runner import Finished, LogSink

KEEP_BYTES = 4 * 1024 * 1024  # of the agent's output, for its result: a long `result` text
PROMPT_FILE = "resume-prompt.txt"


@record(frozen=True, slots=True)
class Plan:
    session_id: str
    prompt: str  # empty: no prompt (stdin is /dev/null)
    command: Command


def fill(template: Command, session_id: str) -> Command:
    """``template`` with ``{session_id}`` replaced (quoted for a shell string)."""
    if isinstance(template, str):
        return template.replace("{session_id}", shlex.quote(session_id))
    return tuple(word.replace("{session_id}", session_id) for word in template)


def with_stdin(command: Command, path: Path) -> Command:
    """``command`` reading ``path`` on its standard input."""
    if isinstance(command, str):
        return f"{{ {command}\n}} < {shlex.quote(str(path))}"
    return ("/bin/sh", "-c", 'exec "$@" < "$0"', str(path), *command)


def _line(record: Request, *, stream: bool = False) -> str | None:
    """What the resumed session is told of ``record``'s answer (None: nothing). ``stream``:
    the session is spoken with in stream-json, where no hook hands Claude its answers."""
    res = record.resolution or Resolution()
    if record.trigger == "claude-question" and not stream:
        return None  # the hook answers the question itself
    words = res.reason or res.note or ""
    by = f" by {res.by}" if res.by else ""
    if record.trigger in ("claude-hook", "claude-permission"):
        gate = record.gate or {}
        call = gate.get("command") or " ".join(str(w) for w in gate.get("argv") or [])
        if outcome_of(record) == "approved" or res.chosen_option in ("approved", "always"):
            return f"loopkit: approved{by}: run `{fold(call, 200)}` again, exactly as before."
        said = f": {words}" if words else ""
        return f"loopkit: rejected{by}{said}. Do not run `{fold(call, 200)}`; go on without it."
    answer = res.parsed_decision or res.free_text or res.chosen_option or ""
    if in_turn(record.trigger):  # loopkit stopped the turn: the human's words, as said
        said = words or res.free_text or answer
        return (f"loopkit stopped your last turn: {fold(record.prompt, 160)} The human "
                f"answered{by}: {said}")  # fmt: skip
    note = f" ({words})" if words and words != answer else ""
    return f'loopkit: the human answered{by} "{fold(record.prompt, 120)}": {answer}{note}'


def plan(
    template: Command | None,
    decisions: list[dict[str, Any]],
    store: RequestStore,
    last_session: str | None,
    state_dir: Path,
) -> Plan | None:
    """The resume run for these decisions, or None: a fresh ``agent`` run."""
    if template is None or not decisions:
        return None
    records = []
    for decision in decisions:
        try:
            records.append(store.load(str(decision.get("request_id"))))
        except LoopkitError:
            continue
    # The supervisor's own blocks start a fresh run — but a turn it stopped inside (a
    # runaway, SPEC §24) is that session's, and goes on with the human's words.
    if not records or any(r.raised_by == "supervisor" and not in_turn(r.trigger)
                          for r in records):  # fmt: skip
        return None
    bound = [agentresult.session_id((r.gate or {}).get("session")) for r in records]
    session = next((s for s in reversed(bound) if s), None) or last_session
    if session is None:
        return None
    stream = speaks_stream_json(template)
    lines = [line for line in (_line(r, stream=stream) for r in records) if line]
    prompt = "\n".join(lines)
    command = fill(template, session)
    if prompt and not stream:  # a stream-json session gets it as its turn's message
        path = state_dir / PROMPT_FILE
        atomicfile.write_text(path, prompt + "\n", mode=0o600)
        command = with_stdin(command, path)
    return Plan(session, prompt, command)


def not_resumed(finished: Finished, result: Result | None, session: str) -> str | None:
    """Why the resume run did not continue ``session`` (None: it did)."""
    if finished.could_not_run:
        return finished.error or f"exit {finished.exit_code}"
    if result is None:
        if finished.ok:
            return None  # it ran; its output is not --output-format json
        return (
            f"exit {finished.exit_code}, no result"
            if finished.exit_code is not None
            else (finished.error or finished.ending)
        )
    if result.stop_reason == "tool_deferred_unavailable":
        return "tool_deferred_unavailable: the deferred tool is gone"
    if result.is_error and not result.num_turns:
        return f"an error result ({result.subtype or 'error'}) before any turn"
    if result.session_id and result.session_id != session:
        return f"it answered as session {result.session_id}"
    return None


class OutputTail:
    """A log sink that passes output on and keeps the last ``KEEP_BYTES`` (for the result)."""

    def __init__(self, log: LogSink) -> None:
        self.log = log
        self.chunks: deque[bytes] = deque()
        self.size = 0

    def write(self, chunk: bytes, /) -> object:
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.chunks and self.size - len(self.chunks[0]) >= KEEP_BYTES:
            self.size -= len(self.chunks.popleft())
        return self.log.write(chunk)

    def result(self) -> Result | None:
        raw = b"".join(self.chunks).rstrip()
        if not raw.endswith(b"}"):
            return None  # not a JSON result: nothing to decode (most agents' output)
        return agentresult.read_result(raw.decode("utf-8", "replace"))
