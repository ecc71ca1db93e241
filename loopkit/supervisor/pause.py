"""The supervisor's side of steering (SPEC section 22): pause, resume, stop and guidance.

Commands arrive as files (:mod:`loopkit.workspace.steer`). :class:`Controls` watches
``.loopkit/control/`` on a thread of its own (inotify through
:class:`~loopkit.watch.folder.FolderWatch`): a ``stop`` given after this supervisor started
ends it as SIGTERM does, at once, the running command included; a ``pause`` or ``resume``
only wakes the loop. The loop asks :meth:`Controls.hold` before each iteration: while paused
it waits there — the running iteration was allowed to finish, no next one starts, no
question is sent, and the state says ``paused``, never ``blocked``.

:func:`guidance_for_agent` hands the notes waiting to the agent run about to start, once.
"""

from __future__ import annotations

import signal
import threading
from typing import Literal

from loopkit import clock
from loopkit.log import get_logger
from loopkit.watch.folder import FolderWatch
from loopkit.workspace.state import LoopStatus
from loopkit.workspace.steer import (
    Notes,
    Says,
    Steering,
    control_dir,
    guidance_text,
    write_guidance,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from loopkit.supervisor.parts import Parts
    from loopkit.workspace import Workspace
    from loopkit.workspace.steer import (
        Order,
    )

log = get_logger("loopkit.supervisor")

Held = Literal["resumed", "stopped"] | None
RECHECK = 2.0  # seconds: a lost inotify event costs at most this


class Controls:
    """Watches the workspace's steering file while the supervisor runs.

    ``stop`` is what a stop order calls (the supervisor's ``request_stop``); ``started_at``
    the supervisor's own start (ISO-8601 UTC): an older stop is history."""

    def __init__(self, parts: Parts, stop: Callable[[int], None]) -> None:
        self.parts = parts
        self.steering = Steering(parts.workspace)
        self.notes = Notes(parts.workspace)
        self.says = Says(parts.workspace)
        self._stop = stop
        self._changed = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._started_at = ""
        self._seen: Order | None = None
        self._shown: tuple[Order | None, int] | None = None  # what the fleet's row says

    def __enter__(self) -> Controls:
        # The real time, as the orders are stamped — with when they were given, also one
        # that came late through the fleet (a test's fake clock is not theirs).
        self._started_at = clock.iso_millis()
        self._seen = self.steering.latest()
        self._shown = (self._seen, self.notes.count())
        folder = control_dir(self.parts.workspace)
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.says.folder.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            log.warning("steer_unwatched", msg=f"cannot watch {folder}: {exc.strerror}")
            return self
        self._thread = threading.Thread(target=self._watch, name="loopkit-steer", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._done.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        folders = [control_dir(self.parts.workspace), self.says.folder]
        with FolderWatch(folders, self._changed) as watch:
            while not self._done.is_set():
                self._messages()  # one given before we watched is taken too
                self._changed.wait(min(watch.timeout_hint, RECHECK))
                self._changed.clear()
                if self._done.is_set():
                    return
                self._look()

    def _messages(self) -> None:
        """Messages for the running turn (``loopkit say``): each to the turn, or a note."""
        for name, note in self.says.take():
            log.info("say", by=note.by, via=note.via,
                     msg=f"a message by {note.by} via {note.via}")  # fmt: skip
            self.parts.mailbox.post(name, note)

    def _look(self) -> None:
        self._messages()
        order = self.steering.latest()
        shown = (order, self.notes.count())
        if shown != self._shown:  # a pause given, a note: the fleet's row says so at once
            self._shown = shown
            self.parts.changed.set()
        if order is None or order == self._seen:
            return
        self._seen = order
        if order.command == "stop":
            if order.at < self._started_at:
                return  # given before this supervisor started
            log.info("steer_stop", by=order.by, via=order.via, at=order.at,
                     msg=f"stopping: {order.line()}")  # fmt: skip
            self._stop(signal.SIGTERM)
            return
        self.parts.wake.set()  # a pause or a resume: the loop looks at it

    def pausing(self) -> bool:
        """Whether a pause is in force (the loop's head will hold)."""
        return self.steering.paused() is not None

    def hold(self) -> Held:
        """Before an iteration: wait while the loop is paused. None when it is not paused,
        ``"resumed"`` after a wait, ``"stopped"`` when a stop came meanwhile."""
        parts = self.parts
        order = self.steering.paused()
        if parts.stop.is_set():
            return "stopped"
        if order is None:
            return None
        parts.state.status = LoopStatus.PAUSED
        parts.save()
        log.info("steer_pause", by=order.by, via=order.via, at=order.at,
                 msg=f"paused: {order.line()}; `loopkit resume` goes on")  # fmt: skip
        while not parts.stop.is_set():
            if self.steering.paused() is None:
                break
            parts.wake.wait(RECHECK)
            parts.wake.clear()
        if parts.stop.is_set():
            return "stopped"
        resumed = self.steering.latest()
        how = resumed.line() if resumed is not None else "its pause was withdrawn"
        log.info("steer_resume", by=resumed.by if resumed else None,
                 via=resumed.via if resumed else None, msg=f"resumed: {how}")  # fmt: skip
        parts.state.status = LoopStatus.RUNNING
        parts.save()
        return "resumed"


def guidance_for_agent(workspace: Workspace) -> dict[str, str]:
    """The notes waiting, taken for the agent run about to start: ``LOOPKIT_GUIDANCE`` (and
    ``.loopkit/guidance.json``), or nothing — each note reaches exactly one run."""
    notes = Notes(workspace).take()
    try:
        write_guidance(workspace, notes)
    except OSError as exc:
        log.warning("guidance_unwritable", msg=f"cannot write guidance.json: {exc.strerror}")
    if not notes:
        return {}
    who = ", ".join(sorted({f"{n.by} via {n.via}" for n in notes}))
    log.info("guidance", notes=len(notes), msg=f"guidance for this run ({who})")
    return {"LOOPKIT_GUIDANCE": guidance_text(notes)}
