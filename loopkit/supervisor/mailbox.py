"""A human's message on its way into the agent's running turn (SPEC section 24).

``loopkit say``, a Telegram message addressed to a loop and the Loops page's box write a
message file (:class:`~loopkit.workspace.steer.Says`). The supervisor's steering thread
(:class:`~loopkit.supervisor.pause.Controls`) takes it and posts it here; the turn that
runs takes it on the runner's thread — the one that writes to the agent's stdin — at its
next wake-up (:meth:`Mailbox.take`), which posting sets. A message reaches the running turn
only where the agent takes input mid-turn (Claude Code in stream-json); otherwise — no turn
runs, the agent takes none, the turn ended first — it becomes a note for the next agent run
(section 22's guidance). Either way the giver is told which (``control/said/``), and the
message is in the events with who and via.

Posting and the turn's end share one lock: a message is either taken by the turn or handed
back when it ends, never lost between the two.
"""

from __future__ import annotations

import threading

from loopkit import clock
from loopkit.log import get_logger
from loopkit.message import fold
from loopkit.workspace.steer import Notes, Said, Says, record_event

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.watch.wake import Wake
    from loopkit.workspace import Workspace
    from loopkit.workspace.steer import Note

log = get_logger("loopkit.supervisor")

Post = tuple[str, "Note"]  # a message's file name, and the message

NO_TURN = "no agent turn runs now"


class Mailbox:
    """Messages for the turn that runs, if it takes them. ``wake``: the runner's."""

    def __init__(self, workspace: Workspace, wake: Wake) -> None:
        self.workspace = workspace
        self.says = Says(workspace)
        self.wake = wake
        self._lock = threading.Lock()
        self._open = False  # a turn that takes messages runs
        self._refusal = NO_TURN  # why a message cannot reach the turn, when it cannot
        self._waiting: list[Post] = []

    # -- the turn's side (the runner's thread) --------------------------------------------

    def turn_started(self, agent: str, *, takes: bool) -> None:
        with self._lock:
            self._open = takes
            self._refusal = "" if takes else f"{agent} takes no message mid-turn"

    def turn_ended(self, why: str = "the turn ended before it got there") -> None:
        """No turn takes messages now; those still waiting become notes."""
        with self._lock:
            self._open, self._refusal = False, NO_TURN
            left, self._waiting = self._waiting, []
        for name, note in left:
            self.noted(name, note, why)

    def take(self) -> list[Post]:
        with self._lock:
            taken, self._waiting = self._waiting, []
        return taken

    def delivered(
        self, name: str, note: Note, *, agent: str, session_id: str | None, iteration: int
    ) -> None:
        """``note`` was written into the running turn: the giver is told so."""
        said = Said("turn", clock.iso_millis(), agent, session_id, iteration)
        self.says.answer(name, said)
        record_event(self.workspace, "say_delivered",
                     f"a message by {note.by} via {note.via} reached the running turn "
                     f"({agent}, iteration {iteration}): {fold(note.text, 80)}",
                     by=note.by, via=note.via, session_id=session_id)  # fmt: skip

    # -- the giver's side (the steering thread) -------------------------------------------

    def post(self, name: str, note: Note) -> None:
        """Hand a message to the running turn, or — when none takes it — make it a note."""
        with self._lock:
            if self._open:
                self._waiting.append((name, note))
                refusal = None
            else:
                refusal = self._refusal
        if refusal is None:
            self.wake.set()
            return
        self.noted(name, note, refusal)

    def noted(self, name: str, note: Note, why: str) -> None:
        """``note`` becomes guidance for the next agent run, and the giver is told why."""
        try:
            Notes(self.workspace).add(note.text, by=note.by, via=note.via)
        except Exception as exc:  # the giver hears of it: nothing is dropped unsaid
            log.warning("say_unsaved", msg=f"cannot keep a message as a note: {exc}")
            self.says.answer(name, Said("lost", clock.iso_millis(), why=str(exc)))
            return
        self.says.answer(name, Said("guidance", clock.iso_millis(), why=why))
        log.info("say_noted", by=note.by, via=note.via,
                 msg=f"a message by {note.by} via {note.via}: a note for the next agent run "
                 f"({why})")  # fmt: skip
