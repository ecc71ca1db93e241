"""Steering a loop from outside its supervisor (SPEC section 22): pause, resume, stop, notes.

Whoever steers — ``loopkit pause|resume|stop|note``, the inbox's buttons and note box, a
Telegram command — writes a file under the workspace's ``.loopkit/control/``; the supervisor
watches that folder and acts on it. Nothing is sent to a process, so a loop is steered the
same way whether its supervisor runs now, starts later or is gone.

- ``control/steer.json``: the latest command, ``{"command", "by", "via", "at"}``, replaced
  atomically; ``at`` is when it was given (for one that came through the fleet, also its
  ``order``: :mod:`loopkit.fleet.steering`). ``pause`` holds until a ``resume`` replaces
  it, across restarts of the supervisor; ``stop`` ends the supervisor that was running
  when it was given (a stop given before the supervisor's own start is history, not an
  order).
- ``control/notes/<ns>-<random>.json`` (one from the fleet: ``<ns>-<order>.json``, ``ns``
  when it was given): one file per note (``{"text", "by", "via", "at"}``),
  created, never rewritten, so two people noting at once lose nothing. The next agent run
  takes them all (:meth:`Notes.take`): they leave the folder before it starts, so each
  reaches exactly one run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from loopkit import atomicfile, clock, readfile
from loopkit.datarecord import asdict, record
from loopkit.errors import UsageError, WorkspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path
    from typing import Any, Literal, NoReturn

    from loopkit.workspace import Workspace

if TYPE_CHECKING:
    Command = Literal["pause", "resume", "stop"]
COMMANDS: tuple[Command, ...] = ("pause", "resume", "stop")
MAX_NOTE = 4000  # characters: guidance, not a document


def control_dir(workspace: Workspace) -> Path:
    return workspace.state_dir / "control"


@record(frozen=True, slots=True)
class Order:
    """One steering command: what, who, via which surface, when (ISO-8601 UTC, ms); one
    that came through the fleet carries its ``order`` (the fleet's key of it: each lands
    once)."""

    command: Command
    by: str
    via: str
    at: str
    order: str | None = None

    def line(self) -> str:
        return f"{self.command} by {self.by} via {self.via} at {self.at[:19].replace('T', ' ')}"


@record(frozen=True, slots=True)
class Note:
    text: str
    by: str
    via: str
    at: str
    order: str | None = None  # the fleet's key of the order it came as, if it did


def _document(item: Order | Note) -> dict[str, Any]:
    """What a file holds of ``item`` (a local one has no ``order``)."""
    return {key: value for key, value in asdict(item).items() if value is not None}


def record_event(workspace: Workspace, event: str, msg: str, **fields: Any) -> None:
    """One line in the workspace's ``events.jsonl``, as :mod:`loopkit.log` writes them (a
    single ``write`` on ``O_APPEND``: lines of concurrent processes never interleave), from
    whichever process steers — a CLI, ``serve`` — without setting logging up. Logging never
    stops a command: a file that cannot be written is skipped."""
    line = {"event": event, **fields, "msg": msg, "logger": "loopkit.steer", "level": "info",
            "timestamp": clock.iso_millis()}  # fmt: skip
    data = (json.dumps(line, default=str).replace("\n", "\\n") + "\n").encode()
    with contextlib.suppress(OSError):
        workspace.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(workspace.events_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                     0o600)  # fmt: skip
        try:
            os.write(fd, data)
        finally:
            os.close(fd)


def _on(machine: str | None) -> str:
    return f" (given on {machine})" if machine else ""


def _given_on(machine: str | None) -> dict[str, str]:
    return {"given_on": machine} if machine else {}


class Steering:
    """``.loopkit/control/steer.json``: the latest pause / resume / stop of one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.folder = control_dir(workspace)
        self.path = self.folder / "steer.json"

    def give(
        self, command: Command, *, by: str, via: str, given_on: str | None = None,
        order: str | None = None, given: datetime | None = None,
    ) -> Order:  # fmt: skip
        """Record ``command`` (replacing the one before) and log it as an event; ``given_on``:
        the machine it was given on, when another one (it came through the fleet), ``order``
        the fleet's key of it and ``given`` when it was given (else now)."""
        new = Order(command, by, via, clock.iso_millis(given), order)
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.write_json(self.path, _document(new), mode=0o600)
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, self.path)) from None
        record_event(self.workspace, f"steer_{command}_given", new.line() + _on(given_on),
                     by=by, via=via, at=new.at, **_given_on(given_on))  # fmt: skip
        return new

    def latest(self) -> Order | None:
        """The latest command, or None (none given, or a file that is not one of ours)."""
        try:
            data = readfile.json_document(readfile.read_text(self.path))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("command") not in COMMANDS:
            return None
        try:
            order = data.get("order")
            return Order(data["command"], str(data["by"]), str(data["via"]), str(data["at"]),
                         str(order) if order is not None else None)  # fmt: skip
        except KeyError:
            return None

    def paused(self) -> Order | None:
        """The pause in force, if the latest command is one."""
        order = self.latest()
        return order if order is not None and order.command == "pause" else None


class Notes:
    """``.loopkit/control/notes/``: guidance waiting for the next agent run."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.folder = control_dir(workspace) / "notes"

    def add(
        self, text: str, *, by: str, via: str, given_on: str | None = None,
        order: str | None = None, given: datetime | None = None,
    ) -> Note:  # fmt: skip
        """Add a note for the next agent run (``given_on`` and ``order`` as for
        :meth:`Steering.give`; a note of an order is named after it, see :meth:`landed`)."""
        text = text.strip()
        if not text:
            self.refuse_empty()
        import secrets  # only a note's writer needs it: `status` and `ps` only read

        note = Note(text[:MAX_NOTE], by, via, clock.iso_millis(given), order)
        tail = order if order is not None else secrets.token_hex(4)
        ns = round(given.timestamp() * 1e9) if given is not None else time.time_ns()
        path = self.folder / f"{ns:020d}-{tail}.json"  # the order they were given in
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.write_json(path, _document(note), mode=0o600)
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, path)) from None
        record_event(self.workspace, "guidance_given", f"a note by {by} via {via}{_on(given_on)}",
                     by=by, via=via, at=note.at, **_given_on(given_on))  # fmt: skip
        return note

    def landed(self, order: str) -> bool:
        """Whether the note of the fleet's order ``order`` was written here already: it
        waits in the folder, or the last agent run took it (``guidance.json``)."""
        if any(path.name.endswith(f"-{order}.json") for path in self._files()):
            return True
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            data: Any = readfile.json_document(
                readfile.read_text(self.workspace.state_dir / "guidance.json")
            )
            return any(one.get("order") == order for one in data.get("notes") or [])
        return False

    @staticmethod
    def refuse_empty() -> NoReturn:
        raise UsageError("an empty note: say what the agent should know, e.g. "
                         "`loopkit note \"use the staging database\"`")  # fmt: skip

    def _files(self) -> list[Path]:
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return []
        return [self.folder / n for n in names if n.endswith(".json") and not n.startswith(".")]

    def pending(self) -> list[Note]:
        """The notes waiting, oldest first."""
        return [note for note in (_note(path) for path in self._files()) if note is not None]

    def count(self) -> int:
        return len(self._files())

    def take(self) -> list[Note]:
        """Every waiting note, oldest first, each removed before it is returned: a note
        reaches one agent run at most, even when the supervisor dies right after."""
        taken = []
        for path in self._files():
            note = _note(path)
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue  # taken by someone else meanwhile
            except OSError:
                continue
            if note is not None:
                taken.append(note)
        return taken


def _note(path: Path) -> Note | None:
    try:
        data: Any = readfile.json_document(readfile.read_text(path))
        order = data.get("order")
        return Note(str(data["text"]), str(data["by"]), str(data["via"]), str(data["at"]),
                    str(order) if order is not None else None)  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None


def guidance_text(notes: list[Note]) -> str:
    """What ``LOOPKIT_GUIDANCE`` holds: the notes' texts, oldest first, one per line."""
    return "\n".join(note.text for note in notes)


def write_guidance(workspace: Workspace, notes: list[Note]) -> None:
    """``.loopkit/guidance.json`` for the run that takes ``notes``; gone for a run without."""
    path = workspace.state_dir / "guidance.json"
    if not notes:
        with contextlib.suppress(OSError):
            path.unlink()
        return
    data = {"guidance": guidance_text(notes), "notes": [_document(n) for n in notes]}
    atomicfile.write_json(path, data, mode=0o600)


# --- messages for the running turn (SPEC §24) ----------------------------------------------


@record(frozen=True, slots=True)
class Said:
    """Where a message went: ``turn`` (written into the agent's running turn) or ``guidance``
    (a note for its next run: no turn ran, or the agent takes no input mid-turn), with the
    agent and session it reached and when."""

    outcome: str
    at: str
    agent: str | None = None
    session_id: str | None = None
    iteration: int | None = None
    why: str | None = None  # why it became guidance

    def line(self, where: str) -> str:
        """What the human is told."""
        if self.outcome == "turn":
            session = f", session {self.session_id}" if self.session_id else ""
            agent = self.agent or "the agent"
            return (f"{where}: delivered into the running turn ({agent}{session}, "
                    f"iteration {self.iteration})")  # fmt: skip
        why = f" ({self.why})" if self.why else ""
        if self.outcome == "lost":
            return f"{where}: not delivered{why}; say it again, or `loopkit note` it"
        return f"{where}: noted for its next agent run{why}"


class Says:
    """``.loopkit/control/say/``: messages for the agent's running turn (``loopkit say``),
    and ``control/said/``: where each went.

    Whoever gives one writes ``say/<ns>-<random>.json`` (``{"text", "by", "via", "at"}``); the
    supervisor takes it (:meth:`take`: the file is removed first, so a message is taken once),
    hands it to the running turn or makes it a note, and writes ``said/<name>`` (:class:`Said`)
    for the giver to read (:meth:`outcome`). A giver that hears nothing in time withdraws its
    message (:meth:`withdraw`: the same removal, so exactly one of the two gets it)."""

    KEEP_ANSWERS = 24 * 3600.0  # seconds an answer nobody read is kept

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.folder = control_dir(workspace) / "say"
        self.answers = control_dir(workspace) / "said"

    def give(self, text: str, *, by: str, via: str) -> str:
        """Write a message; its name (what :meth:`outcome` and :meth:`withdraw` take)."""
        text = text.strip()
        if not text:
            raise UsageError("an empty message: say what the agent should hear, e.g. "
                             "`loopkit say \"stop editing the migrations\"`")  # fmt: skip
        import secrets  # only a message's writer needs it

        name = f"{time.time_ns():020d}-{secrets.token_hex(4)}.json"
        note = Note(text[:MAX_NOTE], by, via, clock.iso_millis())
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomicfile.write_json(self.folder / name, _document(note), mode=0o600, durable=False)
        except OSError as exc:
            raise WorkspaceError(atomicfile.failure(exc, self.folder / name)) from None
        record_event(self.workspace, "say_given", f"a message by {by} via {via}", by=by, via=via,
                     at=note.at)  # fmt: skip
        return name

    def take(self) -> list[tuple[str, Note]]:
        """Every message waiting, oldest first, each removed before it is returned."""
        try:
            names = sorted(n for n in os.listdir(self.folder)
                           if n.endswith(".json") and not n.startswith("."))  # fmt: skip
        except OSError:
            return []
        taken = []
        for name in names:
            path = self.folder / name
            note = _note(path)
            try:
                os.unlink(path)
            except OSError:
                continue  # withdrawn meanwhile
            if note is not None:
                taken.append((name, note))
        return taken

    def withdraw(self, name: str) -> bool:
        """Take the message back: True when nobody had taken it."""
        try:
            os.unlink(self.folder / name)
        except OSError:
            return False
        return True

    def answer(self, name: str, said: Said) -> None:
        """Say where message ``name`` went (answers older than a day, never read, go)."""
        with contextlib.suppress(OSError):
            self.answers.mkdir(mode=0o700, parents=True, exist_ok=True)
            cutoff = time.time() - self.KEEP_ANSWERS
            for old in os.listdir(self.answers):
                with contextlib.suppress(OSError):
                    if os.lstat(self.answers / old).st_mtime < cutoff:
                        os.unlink(self.answers / old)
            document = {k: v for k, v in asdict(said).items() if v is not None}
            atomicfile.write_json(self.answers / name, document, mode=0o600, durable=False)

    def outcome(self, name: str) -> Said | None:
        """Where message ``name`` went, once the supervisor said (the answer is removed)."""
        path = self.answers / name
        try:
            data: Any = readfile.json_document(readfile.read_text(path))
        except (OSError, ValueError):
            return None
        with contextlib.suppress(OSError):
            os.unlink(path)
        try:
            iteration = data.get("iteration")
            return Said(str(data["outcome"]), str(data["at"]), data.get("agent"),
                        data.get("session_id"),
                        iteration if isinstance(iteration, int) else None,
                        data.get("why"))  # fmt: skip
        except (KeyError, AttributeError):
            return None
