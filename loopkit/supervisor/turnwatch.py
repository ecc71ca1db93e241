"""The agent's turn, watched as it runs (SPEC section 24).

An agent that streams events on its stdout — Claude Code's ``stream-json``, Codex's
``exec --json``, Gemini CLI's ``--output-format stream-json`` — runs as a
:class:`~loopkit.supervisor.runner.Conversation` whose events are read as they come
(:class:`~loopkit.supervisor.eventstream.EventStream`); a dialect turns each into what this
module keeps: the call running now and since when, the agent's last words, its turns,
calls, tokens and spend so far. Three things follow, all on the runner's thread, between
two waits:

- **Watch.** What the turn does is written to ``.loopkit/live.json``
  (:mod:`loopkit.workspace.live`) for ``ps``, ``status``, the Loops page and ``/loops``:
  once per read of the agent's output (all the events it held), at once after a quiet
  spell, then at most every :data:`LIVE_EVERY` s (an event every few milliseconds is one
  small rename every tenth of a second, never an fsync). What the agent says and calls
  goes to the console and the iteration log as text (``loopkit tail`` follows it), each
  line redacted.
- **Steer.** A human's message (:mod:`~loopkit.supervisor.mailbox`) goes into the running
  turn where the agent takes input mid-turn (:attr:`TurnWatch.takes_messages`).
- **Stop a runaway.** Every call and sign of life feeds
  :class:`~loopkit.supervisor.runaway.Runaway`; when it fires, the turn is stopped: the
  agent's own interrupt where it has one (:meth:`TurnWatch.interrupt_own`), else — or when
  that does not end it within the grace, or the agent starts another call meanwhile —
  SIGINT, to the command's process group as Ctrl-C in a terminal sends it (the agent gets
  it also when a shell runs it), then the runner stops the whole group
  (``TurnWatch.ending``: SIGTERM, SIGKILL after ``kill_grace``). The session is kept:
  the iteration asks the human with the evidence, and the answer resumes it (with
  ``[loop] resume``).

A dialect subclasses :class:`TurnWatch` for its events (``_on_event``) and, if it has
them, its input (:meth:`TurnWatch.deliver`) and its own interrupt
(:meth:`TurnWatch.interrupt_own`); it tells what it reads by calling
:meth:`TurnWatch.session`, :meth:`TurnWatch.turn`, :meth:`TurnWatch.words`,
:meth:`TurnWatch.tool_started`, :meth:`TurnWatch.tool_finished`, :meth:`TurnWatch.usage` and
:meth:`TurnWatch.spent`.
"""

from __future__ import annotations

import contextlib
import json
import signal
import time

from loopkit import clock
from loopkit.log import get_logger
from loopkit.message import clean, fold
from loopkit.supervisor.eventstream import EventStream
from loopkit.supervisor.runaway import Runaway, call_of
from loopkit.supervisor.runner import TAIL_BYTES
from loopkit.workspace import live

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from loopkit.config import StuckConfig
    from loopkit.supervisor.mailbox import Mailbox
    from loopkit.supervisor.runaway import Call
    from loopkit.supervisor.runner import AgentInput
    from loopkit.supervisor.stuck import Signal
    from loopkit.workspace import Workspace
    from loopkit.workspace.steer import Note

log = get_logger("loopkit.supervisor")

LIVE_EVERY = 0.1  # seconds: the most often live.json is rewritten
TEXT_CHARS = 2000  # of the agent's last words kept in live.json
INPUT_CHARS = 16 * 1024  # of a call's input kept in live.json (a command in full)
INTERRUPT_GRACE = 5.0  # seconds each way of stopping a turn is given before the next


class LiveRecord:
    """``.loopkit/live.json`` kept for one run, written coalesced (:data:`LIVE_EVERY`)."""

    def __init__(self, workspace: Workspace, base: dict[str, Any], now: Callable[[], float]):
        self.workspace = workspace
        self.data: dict[str, Any] = {"version": live.LIVE_VERSION, **base}
        self.now = now
        self._written = float("-inf")
        self._dirty = False
        self.broken = False

    def update(self, **fields: Any) -> None:
        """Change the record; written by :meth:`flush` (the watch's next tick: one write for
        all the events of one read)."""
        self.data.update(fields)
        self._dirty = True

    def due(self) -> float | None:
        """When the changes waiting are to be written (None: none wait)."""
        return self._written + LIVE_EVERY if self._dirty else None

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._written = self.now()
        try:
            live.write(self.workspace, self.data)
        except OSError as exc:
            if not self.broken:
                self.broken = True
                log.warning("live_unwritable", msg=f"cannot write live.json: {exc.strerror}")


def _input_kept(given: Any) -> Any:
    """A call's input as live.json keeps it: every field, a long text cut (a command is kept
    whole up to :data:`INPUT_CHARS`)."""
    if isinstance(given, dict):
        return {str(k): _input_kept(v) for k, v in list(given.items())[:40]}
    if isinstance(given, list):
        return [_input_kept(v) for v in given[:40]]
    if isinstance(given, str) and len(given) > INPUT_CHARS:
        return given[:INPUT_CHARS] + f"… [{len(given) - INPUT_CHARS} more characters]"
    return given


class TurnWatch:
    """One agent run whose events are read as they come: a
    :class:`~loopkit.supervisor.runner.Conversation`.

    ``settings``: the ``[stuck]`` thresholds; ``now``: the monotonic clock (a test's);
    ``live``: the record to keep (None: none); ``mailbox``: messages for the turn (None:
    none come); ``redact``: what every text shown or kept passes; ``iteration``: the run's.
    After the run, ``session_id`` is the agent's session, ``runaway`` the signal that
    stopped it (None: none did) and ``stopped_by`` how."""

    agent = "agent"  # the dialect's name, as the console and live.json say it
    title = "the agent"  # its name for a human
    writes = False  # whether it speaks on the agent's stdin

    def __init__(
        self,
        settings: StuckConfig,
        *,
        now: Callable[[], float] = time.monotonic,
        live_record: LiveRecord | None = None,
        mailbox: Mailbox | None = None,
        redact: Callable[[str], str] = str,
        iteration: int = 0,
        grace: float = INTERRUPT_GRACE,
    ) -> None:
        self.now = now
        self.events = EventStream(self._print)
        self.events.listen(self._on_event)
        self.live = live_record
        self.mailbox = mailbox
        self.redact = redact
        self.iteration = iteration
        self.grace = grace
        self.watch = Runaway(settings, now())
        self.session_id: str | None = None
        self.runaway: Signal | None = None
        self.stopped_by: str | None = None
        self.ending = False  # the runner ends the agent's group now
        self.turns = 0
        self.calls = 0
        self.tokens = {"input": 0, "output": 0}
        self.delivered = 0
        self._running: dict[str, tuple[Call, float, dict[str, Any]]] = {}
        self._say: Callable[[bytes], None] | None = None
        self._signal: Callable[[int], None] | None = None
        self._printing = False
        self._stage: str | None = None  # how the stop goes on: "own", "sigint"
        self._stage_until = 0.0
        self._after_stop = 0  # calls the agent started since the stop's last step
        self._closed = False
        self._raw = bytearray()  # the end of what the agent printed, as it printed it

    @property
    def printed(self) -> str:
        """The end of the agent's own output (its events, not the lines shown for them):
        what its usage, outages and refused calls are read from
        (:func:`loopkit.supervisor.spend.agent_run`), as for an agent not watched."""
        return self._raw.decode("utf-8", "replace")

    # -- what a dialect says ---------------------------------------------------------------

    @property
    def takes_messages(self) -> bool:
        """Whether a message can go into the turn now (an agent that reads stream-json)."""
        return False

    def interrupt_own(self) -> bool:
        """Ask the agent to stop its turn its own way; False: it has none."""
        return False

    def deliver(self, note: Note) -> bool:
        """Write a human's message into the turn; False: it could not."""
        return False

    def _on_event(self, event: dict[str, Any]) -> None:
        """One decoded event (a dialect reads it)."""

    # -- the runner's side -----------------------------------------------------------------

    def opened(
        self, stdin: AgentInput | None, say: Callable[[bytes], None],
        signal_group: Callable[[int], None] | None = None,
    ) -> None:  # fmt: skip
        self.events.stdin = stdin
        self._say = say
        self._signal = signal_group
        self._begin()
        if self.mailbox is not None:
            self.mailbox.turn_started(self.agent, takes=self.takes_messages)
        now = clock.iso_millis()
        self._record(started_at=now, event_at=now, session_id=self.session_id, tool=None,
                     text=None, text_at=None, turns=0, calls=0, tokens=dict(self.tokens),
                     spend_usd=None, takes_messages=self.takes_messages, messages=0,
                     runaway=None, ended_at=None)  # fmt: skip
        if self.live is not None:
            self.live.flush()

    def _begin(self) -> None:
        """What the dialect does first (Claude: its prompt)."""

    def received(self, chunk: bytes) -> None:
        self._heard()
        self._raw += chunk
        del self._raw[: max(0, len(self._raw) - TAIL_BYTES)]  # as the runner's tail
        self.events.feed(chunk)

    def output(self) -> None:
        """The agent printed something on its other streams: a sign of life."""
        if not self._printing:
            self._heard()

    def due(self) -> float | None:
        """When :meth:`tick` must run next at the latest (None: on the next wake-up)."""
        times = [self.watch.due(), self.live.due() if self.live else None]
        if self._stage is not None:
            times.append(self._stage_until)
        found = [t for t in times if t is not None]
        return min(found) if found else None

    def tick(self) -> None:
        """Between two waits: the messages waiting, silence, the stop going on, live.json."""
        if self._closed:
            return
        now = self.now()
        if self.mailbox is not None:
            for name, note in self.mailbox.take():
                if self.takes_messages and self.deliver(note):
                    self.delivered += 1
                    self._line(f"← {note.by} via {note.via}: {fold(clean(note.text), 200)}")
                    self._record(messages=self.delivered)
                    # Told last: whoever reads the answer finds the line in the log already.
                    self.mailbox.delivered(name, note, agent=self.agent,
                                           session_id=self.session_id,
                                           iteration=self.iteration)  # fmt: skip
                else:
                    self.mailbox.noted(name, note, "the turn ended before it got there")
        if self.runaway is None:
            running = self._current()
            since = self._running[running[0]][1] if running else None
            fired = self.watch.silence(now, running[1] if running else None, since)
            if fired is not None:
                self._stop(fired)
        if self._stage is not None and now >= self._stage_until:
            self._escalate_stop()
        if self.live is not None and (due := self.live.due()) is not None and now >= due:
            self.live.flush()

    def closed(self) -> None:
        self._closed = True
        self.events.end()
        if self.mailbox is not None:
            self.mailbox.turn_ended()
        self._record(ended_at=clock.iso_millis(), tool=None)
        if self.live is not None:
            self.live.flush()

    # -- what the dialects call --------------------------------------------------------------

    def session(self, session_id: str | None) -> None:
        if session_id and session_id != self.session_id:
            self.session_id = session_id
            self._record(session_id=session_id)

    def turn(self) -> None:
        """A model response."""
        self.turns += 1
        self._record(turns=self.turns)

    def usage(self, input_tokens: object, output_tokens: object) -> None:
        for name, value in (("input", input_tokens), ("output", output_tokens)):
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                self.tokens[name] += value
        self._record(tokens=dict(self.tokens))

    def spent(self, usd: object) -> None:
        if isinstance(usd, int | float) and not isinstance(usd, bool) and usd >= 0:
            self._record(spend_usd=float(usd))

    def words(self, text: str) -> None:
        """What the agent said (shown line by line; the last words kept)."""
        if not text.strip():
            return
        for line in text.splitlines():
            self._line(clean(line))
        self._record(text=fold(self.redact(text.strip()), TEXT_CHARS), text_at=clock.iso_millis())

    def tool_started(self, call_id: str, tool: str, given: Any) -> None:
        """The agent calls ``tool`` with ``given`` (``call_id``: its id in the stream)."""
        call = call_of(tool, given, self.redact)
        self._line(f"→ {call.shown}")
        self.calls += 1
        kept = self._kept(given)
        self._running[call_id] = (call, self.now(), {"name": tool, "input": kept, "id": call_id,
                                                     "since": clock.iso_millis()})  # fmt: skip
        self._record(tool=self._running[call_id][2], calls=self.calls)
        if self._stage is not None:
            # Still calling while being stopped: the way tried did not take. One call may
            # have been on its way when the agent's own interrupt went out; after SIGINT
            # none may start.
            self._after_stop += 1
            if self._after_stop >= (2 if self._stage == "own" else 1):
                self._escalate_stop()
            return
        fired = self.watch.call(call, self.now())
        if fired is not None and self.runaway is None:
            self._stop(fired)

    def tool_finished(self, call_id: str, text: str, *, failed: bool) -> None:
        found = self._running.pop(call_id, None)
        if found is not None:
            self.watch.outcome(found[0], self.redact(text), failed=failed)
        if failed:
            self._line(f"✗ {fold(clean(text), 200)}")
        current = self._current()
        self._record(tool=self._running[current[0]][2] if current else None)

    def line(self, text: str) -> None:
        """A line of the dialect's own (a result, a session) on the console and in the log."""
        self._line(text)

    # -- stopping a runaway --------------------------------------------------------------------

    def _stop(self, fired: Signal) -> None:
        self.runaway = fired
        log.warning("runaway", trigger=fired.trigger, count=fired.count,
                    threshold=fired.threshold,
                    msg=f"stuck in the turn: {fired.question} ({fired.trigger}); stopping "
                    "the turn, keeping its session")  # fmt: skip
        self._line(f"loopkit: {fired.question} — stopping the turn ([stuck] {fired.trigger})")
        self._record(runaway={"trigger": fired.trigger, "question": fired.question,
                              "at": clock.iso_millis()})  # fmt: skip
        if self.interrupt_own():
            self.stopped_by = f"{self.title}'s own interrupt"
            self._step("own")
        else:
            self._sigint()

    def _step(self, stage: str | None) -> None:
        self._stage, self._stage_until, self._after_stop = stage, self.now() + self.grace, 0

    def _sigint(self) -> None:
        self.stopped_by = "SIGINT to its process group (as Ctrl-C)"
        if self._signal is not None:
            with contextlib.suppress(OSError):
                self._signal(signal.SIGINT)
        self._step("sigint")

    def _escalate_stop(self) -> None:
        if self._stage == "own":
            log.warning("runaway_sigint", msg=f"{self.title} did not stop its turn on its "
                        "own interrupt: SIGINT")  # fmt: skip
            self._sigint()
        else:
            log.warning("runaway_group", msg=f"{self.title} did not stop on SIGINT: its "
                        "process group is stopped")  # fmt: skip
            self.stopped_by = "stopping its process group (SIGTERM, then SIGKILL)"
            self._step(None)
            self.ending = True

    # -- the rest ----------------------------------------------------------------------------------

    def _current(self) -> tuple[str, Call] | None:
        if not self._running:
            return None
        call_id = next(reversed(self._running))
        return call_id, self._running[call_id][0]

    def _kept(self, given: Any) -> Any:
        kept = _input_kept(given)
        try:
            return json.loads(self.redact(json.dumps(kept, ensure_ascii=False)))
        except ValueError:  # a redaction that broke the JSON: the text alone, masked
            return self.redact(str(kept))

    def _heard(self) -> None:
        now = self.now()
        self.watch.heard(now)
        self._record(event_at=clock.iso_millis())

    def _record(self, **fields: Any) -> None:
        if self.live is not None:
            self.live.update(**fields)

    def _print(self, raw: bytes) -> None:
        if self._say is not None:
            self._printing = True
            try:
                self._say(raw)
            finally:
                self._printing = False

    def _line(self, text: str) -> None:
        self._print(f"{self.agent}: {text}\n".encode())
