"""Folder watching for the supervisor, hiding watchdog.

:class:`FolderWatch` sets a wake-up (the supervisor's *wake*) whenever an entry
of a watched folder is created, deleted or moved. It registers a raw callback with
watchdog's inotify reader (``watchdog.observers.inotify_c.InotifyFD``) rather than using
the stock ``Observer``: the Observer holds every ``IN_MOVED_FROM`` for 0.5 s to pair it with
an ``IN_MOVED_TO`` (and, the queue being ordered, everything behind it too), which would
make ``mv BLOCKED.md elsewhere/`` a half-second unblock. Events are a wake-up: callers
always look at the file system itself. For a file a caller *follows* (:meth:`FolderWatch.follow`,
BLOCKED.md) the watch also remembers how it last went, pairing a rename's ``IN_MOVED_FROM``
and ``IN_MOVED_TO`` by their cookie: ``"renamed"`` (to another name in the same folder),
``"moved_out"`` (an ``IN_MOVED_FROM`` nothing has paired yet: out of the folder),
``"deleted"``, or None (it came back, or no event said). The pair is usually read together,
but inotify(7) does not promise it is queued atomically, so a late ``IN_MOVED_TO`` still turns
``"moved_out"`` into ``"renamed"``.

The watch re-arms itself when a folder is deleted and recreated, when watchdog's reader
thread dies, and after an exception in the callback. When inotify is not available (not
Linux, or ``fs.inotify.max_user_watches`` / ``max_user_instances`` exhausted) it falls back
to polling: callers wake every :data:`POLL_INTERVAL` seconds instead, and a warning says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from pathlib import Path
from typing import Literal

from loopkit.log import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from loopkit.watch.wake import Waker

log = get_logger("loopkit.watch")

POLL_INTERVAL = 0.05  # polling fallback: how often callers re-check
SAFETY_INTERVAL = 2.0  # with inotify: re-check this often anyway (a lost event costs ≤ 2 s)

Mode = Literal["inotify", "polling"]
Vanish = Literal["deleted", "moved_out", "renamed"]


def _probe(name: str) -> bool:
    """A name an editor makes in a folder to learn how to save there: vim's ``4913`` (and
    the numbers after it), gedit's ``.goutputstream-…``."""
    return name.isdigit() or name.startswith(".goutputstream-")


def _tells_of_an_editor(name: str, of: str) -> bool:
    """Whether ``name`` is an editor's swap, lock or temporary file for the file ``of``."""
    if name.startswith(f".{of}.sw") and len(name) == len(of) + 5:  # vim, nano: .NAME.swp
        return True
    return name in (f".#{of}", f"#{of}#", f".{of}.kate-swp", f"{of}___jb_tmp___",
                    f"{of}___jb_old___")  # fmt: skip


def _inotify_reader() -> Any:
    from watchdog.observers.inotify_c import InotifyFD

    reader = InotifyFD()
    reader.start()
    return reader


def _mask() -> int:
    from watchdog.observers.inotify_c import InotifyConstants as C

    return int(
        C.IN_CREATE
        | C.IN_DELETE
        | C.IN_MOVED_FROM
        | C.IN_MOVED_TO
        | C.IN_DELETE_SELF
        | C.IN_MOVE_SELF
        | C.IN_ONLYDIR
        | C.IN_DONT_FOLLOW
    )


class _Callback:
    """watchdog's ``WatchCallback``. Never raises: an exception would end the reader thread."""

    def __init__(self, watch: FolderWatch, folder: Path) -> None:
        self.watch = watch
        self.folder = folder

    def _safely(self, dead: bool) -> None:
        try:
            self.watch._notify(self.folder, dead=dead)
        except Exception as exc:  # a failing handler must never end the watch
            self.watch.wake.set()
            log.warning("watch_handler_error", msg=f"folder watch handler failed: {exc!r}")

    def on_event(self, event: object) -> None:
        try:
            self.watch._record(self.folder, event)
        except Exception:  # an odd event must not end the watch; how it went stays unknown
            self.watch._forget()
        self._safely(bool(getattr(event, "is_delete_self", False)))

    def on_watch_deleted(self, wd: object) -> None:
        self._safely(True)

    def on_queue_overflow(self) -> None:
        self.watch._forget()  # events were lost: how a followed file went is unknown
        self._safely(False)


class FolderWatch:
    """Wake ``wake`` on entry changes in ``folders`` (non-recursive)."""

    def __init__(
        self,
        folders: Sequence[Path],
        wake: Waker,
        *,
        reader_factory: Callable[[], Any] = _inotify_reader,
    ) -> None:
        self.folders = [Path(f) for f in folders]
        self.wake = wake
        self._factory = reader_factory
        self._reader: Any = None
        self._armed: dict[Path, tuple[int, int, Any]] = {}  # folder → (inode, wd, callback)
        self._dead: set[Path] = set()
        self._lock = threading.Lock()
        self.mode: Mode = "polling"
        self._warned = False
        self._followed: dict[Path, tuple[Vanish, int] | None] = {}  # path → (how, cookie)
        self._inodes: dict[Path, int] = {}  # a followed path → its inode, last seen there
        self._probed: set[Path] = set()  # followed paths whose folder an editor probed since

    @property
    def timeout_hint(self) -> float:
        """How long a caller may sleep on ``wake`` before it should look again anyway.

        A folder that does not exist yet needs no polling when its parent is watched: its
        creation wakes the watch, which then arms it.
        """
        if self.mode == "polling":
            return POLL_INTERVAL
        for folder in self.folders:
            if folder not in self._armed and folder.parent not in self._armed:
                return POLL_INTERVAL
        return SAFETY_INTERVAL

    def __enter__(self) -> FolderWatch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        try:
            self._reader = self._factory()
            self.mode = "inotify"
        except (ImportError, OSError) as exc:
            self._fall_back(exc)
        self.ensure()

    def _fall_back(self, exc: BaseException) -> None:
        self.mode = "polling"
        self._reader = None
        if not self._warned:
            self._warned = True
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            log.warning(
                "watch_polling",
                reason=reason,
                msg=f"inotify unavailable ({reason}); polling every {POLL_INTERVAL * 1000:.0f} "
                "ms instead (raise fs.inotify.max_user_watches/max_user_instances to fix)",
            )

    def follow(self, path: Path) -> None:
        """Remember how ``path`` (in a watched folder) goes; see :meth:`vanished`."""
        with self._lock:
            self._followed.setdefault(Path(path), None)
        self.seen(path)

    def seen(self, path: Path) -> bool:
        """Note that a followed ``path`` is there now (its inode: :meth:`renamed_within`
        finds it under another name); False when it is not."""
        try:
            inode = os.lstat(path).st_ino
        except OSError:
            return False
        with self._lock:
            self._inodes[Path(path)] = inode
            self._probed.discard(Path(path))
        return True

    def ever_seen(self, path: Path) -> bool:
        with self._lock:
            return Path(path) in self._inodes

    def same_folder(self, path: Path) -> bool:
        """Whether ``path``'s folder is still the folder the watch is armed on (not swapped
        for another since)."""
        armed = self._armed.get(path.parent)
        try:
            return armed is not None and os.stat(path.parent).st_ino == armed[0]
        except OSError:
            return False

    def renamed_within(self, path: Path) -> bool:
        """Whether the file last seen at ``path`` is in its folder under another name (a
        rename inside the folder: an editor's safe-write), read from the folder itself —
        whatever order, or delay, the rename's events come in."""
        with self._lock:
            inode = self._inodes.get(Path(path))
        if inode is None:
            return False
        try:
            with os.scandir(path.parent) as entries:
                return any(e.inode() == inode and e.name != path.name for e in entries)
        except OSError:
            return False

    def editing(self, path: Path) -> bool:
        """Whether an editor is at work on ``path``: its swap or lock file beside it (vim's
        and nano's ``.NAME.swp``, Emacs's ``.#NAME``, Kate's ``.NAME.kate-swp``,
        JetBrains' ``NAME___jb_tmp___``), or a probe it made in the folder since ``path`` was
        last there (vim's ``4913``, gedit's ``.goutputstream-…``) — or the folder itself went
        and came back since (a folder swap)."""
        with self._lock:
            if Path(path) in self._probed:
                return True
        try:
            with os.scandir(path.parent) as entries:
                return any(_tells_of_an_editor(e.name, path.name) for e in entries)
        except OSError:
            return False

    def vanished(self, path: Path) -> Vanish | None:
        """How a followed ``path`` last went, by the events read so far; None when it came
        back since, or when no event said (not followed, polling, events lost, re-armed)."""
        with self._lock:
            how = self._followed.get(Path(path))
        return how[0] if how else None

    def _forget(self) -> None:
        with self._lock:
            self._followed = dict.fromkeys(self._followed)

    def _record(self, folder: Path, event: Any) -> None:
        if not self._followed or not event.name:
            return
        name = os.fsdecode(event.name)
        path = folder / name
        if (event.is_create or event.is_moved_to) and _probe(name):
            with self._lock:
                self._probed.update(p for p in self._followed if p.parent == folder)
        with self._lock:
            followed = path in self._followed
            if event.is_moved_to and not followed:
                for other, how in self._followed.items():
                    if how == ("moved_out", event.cookie) and other.parent == folder:
                        self._followed[other] = ("renamed", event.cookie)
            elif not followed:
                return
            elif event.is_moved_from:
                self._followed[path] = ("moved_out", event.cookie)
            elif event.is_delete:
                self._followed[path] = ("deleted", 0)
            elif event.is_create or event.is_moved_to:
                self._followed[path] = None
                with contextlib.suppress(OSError):  # the new file's inode, as it arrives
                    self._inodes[path] = os.lstat(path).st_ino

    def _notify(self, folder: Path, *, dead: bool) -> None:
        if dead:
            with self._lock:
                self._dead.add(folder)
                # The folder itself went (deleted, moved: a folder swap in progress): its
                # files are in a save until they are seen again.
                self._probed.update(p for p in self._followed if p.parent == folder)
        self.wake.set()

    def ensure(self) -> None:
        """Re-arm what needs it: a recreated folder, a dead watch, a dead reader thread."""
        if self.mode != "inotify":
            return
        for attempt in (1, 2):
            if self._reader is None or not self._reader.is_alive() or attempt == 2:
                self._disarm_all()
                try:
                    self._reader = self._factory()
                except (ImportError, OSError) as exc:
                    self._fall_back(exc)
                    return
            try:
                for folder in self.folders:
                    self._ensure_folder(folder)
                return
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EMFILE, errno.ENOMEM) or attempt == 2:
                    self._disarm_all()
                    self._fall_back(exc)
                    return
                # e.g. EBADF: the reader was closing under us; try once with a fresh one

    def _ensure_folder(self, folder: Path) -> None:
        try:
            inode = os.stat(folder).st_ino
        except OSError:
            inode = None
        with self._lock:
            dead = folder in self._dead
            self._dead.discard(folder)
        armed = self._armed.get(folder)
        if armed and not dead and armed[0] == inode:
            return
        if armed:
            self._disarm(folder)
            with self._lock:
                for path in self._followed:
                    if path.parent == folder:
                        self._followed[path] = None
                        if inode != armed[0]:  # another folder now: a swap in progress
                            self._probed.add(path)
        if inode is None:
            return  # not there (yet); callers poll until it is
        callback = _Callback(self, folder)
        wd = self._reader.add_callback(os.fsencode(folder), _mask(), callback, id(callback))
        self._armed[folder] = (inode, wd, callback)
        self.wake.set()  # look again right after (re)arming: a change in between is not missed

    def _disarm(self, folder: Path) -> None:
        _, wd, callback = self._armed.pop(folder)
        with contextlib.suppress(Exception):  # the watch may be gone with its folder
            self._reader.remove_callbacks([(wd, id(callback))])

    def _disarm_all(self) -> None:
        for folder in list(self._armed):
            self._disarm(folder)

    def stop(self) -> None:
        if self._reader is not None:
            self._disarm_all()
            try:
                self._reader.stop()
                self._reader.join(timeout=2)
            except Exception:
                pass
            self._reader = None
