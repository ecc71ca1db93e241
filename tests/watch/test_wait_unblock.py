"""Waiting out a block with a real inotify watch: editor saves, folders, fallbacks."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopkit.watch.folder import FolderWatch
from loopkit.watch.waits import wait_unblock

from helpers import wait_until


class Waiter:
    """``wait_unblock`` in a thread; ``settle()`` proves it looked again after a change."""

    def __init__(self, path: Path, **watch_options: Any) -> None:
        self.path = path
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.watch = FolderWatch([path.parent], self.wake, **watch_options)
        self.looks: list[float] = []
        self.result: str | None = None
        self.probes = 0

    def _answered(self) -> bool:
        self.looks.append(time.monotonic())
        return False

    def start(self) -> Waiter:
        self.watch.start()

        def run() -> None:
            self.result = wait_unblock(
                self.path, self.watch, self.wake, self.stop, deadline=None, answered=self._answered
            )

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.looks, what="the first look")
        return self

    def settle(self) -> None:
        """Touch a probe file and wait until the waiter has looked after it (or returned)."""
        self.probes += 1
        probe_at = time.monotonic()
        (self.path.parent / f"probe-{self.probes}").touch()
        wait_until(
            lambda: self.result is not None or (self.looks and self.looks[-1] > probe_at),
            what="a look after the probe",
        )

    def outcome(self, timeout: float = 5.0) -> str | None:
        self.thread.join(timeout)
        return self.result

    def close(self) -> None:
        self.stop.set()
        self.wake.set()
        self.thread.join(5)
        self.watch.stop()


@pytest.fixture
def block(ws: Path) -> Path:
    path = ws / "BLOCKED.md"
    path.write_text("# Blocked\noriginal\n")
    return path


@pytest.fixture
def waiter(block: Path) -> Iterator[Waiter]:
    started = Waiter(block).start()
    try:
        yield started
    finally:
        started.close()


def rewrite_in_place(path: Path) -> None:
    with path.open("w") as handle:
        handle.write("# Blocked\nedited in place\n")


def temp_then_rename(path: Path) -> None:  # sed -i, most editors' atomic save
    tmp = path.with_name(".BLOCKED.md.swp")
    tmp.write_text("# Blocked\nsaved via rename\n")
    os.rename(tmp, path)


def rename_away_then_write(path: Path) -> None:  # vim backupcopy=no
    os.rename(path, path.with_name("BLOCKED.md~"))
    time.sleep(
        0.003
    )  # the editor's gap: the file is absent for a few ms (the scenario, not a sync)
    path.write_text("# Blocked\nwritten anew\n")


def jetbrains_safe_write(path: Path) -> None:
    tmp = path.with_name("BLOCKED.md___jb_tmp___")
    old = path.with_name("BLOCKED.md___jb_old___")
    tmp.write_text("# Blocked\nsafe write\n")
    os.rename(path, old)
    time.sleep(0.002)
    os.rename(tmp, path)
    old.unlink()


@pytest.mark.parametrize(
    "save", [rewrite_in_place, temp_then_rename, rename_away_then_write, jetbrains_safe_write]
)
def test_an_editor_save_is_not_an_unblock(waiter: Waiter, block: Path, save: Any) -> None:
    for _ in range(5):
        save(block)
        waiter.settle()
        assert waiter.result is None, f"{save.__name__} was taken for an unblock"
    block.unlink()
    assert waiter.outcome() == "gone"


def _other_file_system(than: Path) -> Path | None:
    for candidate in ("/dev/shm", "/run/user", "/run"):
        with_it = Path(candidate)
        writable = with_it.is_dir() and os.access(with_it, os.W_OK)
        if writable and os.stat(with_it).st_dev != os.stat(than).st_dev:
            return with_it
    return None


VIM = shutil.which("vim")


@pytest.mark.skipif(VIM is None and not os.environ.get("CI"), reason="vim is not installed")
# vim's copy-then-delete (backup on another file system) is told by its swap file and its
# 4913 probe, whatever the gap (the slow, loaded cases below hold that in every run); the
# real vim on another file system needs one (/dev/shm, /run): it runs with the soaks.
@pytest.mark.parametrize(
    "backup", ["beside", "elsewhere", pytest.param("other-fs", marks=pytest.mark.soak)]
)
def test_real_vim_saving_is_not_an_unblock(
    waiter: Waiter, block: Path, tmp_path: Path, backup: str
) -> None:
    """vim's write-backup: the original renamed to ``BLOCKED.md~`` beside it (IN_MOVED_FROM and
    IN_MOVED_TO paired by cookie), renamed out of the folder (``backupdir`` elsewhere: an
    IN_MOVED_FROM nothing pairs), or copied and deleted (``backupdir`` on another file
    system: IN_DELETE) — each time followed by a new BLOCKED.md."""
    settings = "set backupcopy=auto writebackup backupskip="  # tmp_path is under /tmp
    with contextlib.ExitStack() as stack:
        if backup == "elsewhere":
            folder = tmp_path / "vim-backups"
            folder.mkdir()
            settings += f" backupdir={folder}"
        elif backup == "other-fs":
            base = _other_file_system(block.parent)
            if base is None:
                pytest.skip("no writable folder on another file system")
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=base)))
            settings += f" backupdir={folder}"
        for n in range(3):
            subprocess.run(
                [VIM or "vim", "-u", "NONE", "-i", "NONE", "-N", "-X", "-T", "dumb",
                 "--not-a-term", "-c", settings, "-c", f"normal Goedit {n}", "-c", "wq",
                 str(block)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                check=True, timeout=30,
            )  # fmt: skip
            assert f"edit {n}" in block.read_text()
            waiter.settle()
            assert waiter.result is None, f"vim (backup {backup}) was taken for an unblock"
    block.unlink()
    assert waiter.outcome() == "gone"


@pytest.mark.parametrize(
    ("change", "seen"),
    [
        (lambda b, away: b.unlink(), "deleted"),
        (lambda b, away: os.rename(b, away / "BLOCKED.md"), "moved_out"),
        (lambda b, away: os.rename(b, b.with_name("BLOCKED.done.md")), "renamed"),
        (lambda b, away: temp_then_rename(b), None),
    ],
    ids=["rm", "mv-out", "mv-within", "rename-onto"],
)
def test_the_watch_tells_how_blocked_md_went(
    block: Path, tmp_path: Path, change: Any, seen: str | None
) -> None:
    probe = block.parent / "probe"
    probe.touch()
    with FolderWatch([block.parent], threading.Event()) as watch:
        watch.follow(block)
        watch.follow(probe)
        assert watch.vanished(block) is None
        change(block, tmp_path)
        probe.unlink()  # inotify keeps order: once this is read, so is the change
        wait_until(lambda: watch.vanished(probe) == "deleted", what="the probe's event")
        assert watch.vanished(block) == seen


def test_rm_and_mv_out_are_unblocks(ws: Path, tmp_path: Path, block: Path) -> None:
    first = Waiter(block).start()
    block.unlink()
    assert first.outcome() == "gone"
    first.close()
    block.write_text("again\n")
    second = Waiter(block).start()
    os.rename(block, tmp_path / "elsewhere.md")
    assert second.outcome() == "gone"
    second.close()


def test_gone_before_the_watch_starts(ws: Path) -> None:
    waiter = Waiter(ws / "BLOCKED.md")
    waiter.watch.start()
    wake, stop = waiter.wake, waiter.stop
    assert wait_unblock(waiter.path, waiter.watch, wake, stop, deadline=None) == "gone"
    waiter.watch.stop()


def test_a_folder_is_not_gone(block: Path) -> None:
    block.unlink()
    block.mkdir()
    waiter = Waiter(block).start()
    try:
        waiter.settle()
        assert waiter.result is None
        block.rmdir()
        assert waiter.outcome() == "gone"
    finally:
        waiter.close()


def test_survives_the_folder_being_recreated(waiter: Waiter, block: Path) -> None:
    folder = block.parent
    [(_, _, old_callback)] = waiter.watch._armed.values()
    made = folder.with_name("made-anew")
    made.mkdir()
    (made / "BLOCKED.md").write_text("# Blocked\nrestored\n")
    os.rename(folder, folder.with_name("gone-away"))
    os.rename(made, folder)  # the folder made anew, its BLOCKED.md in it
    shutil.rmtree(folder.with_name("gone-away"))
    waiter.settle()
    assert waiter.result is None
    wait_until(
        lambda: any(cb is not old_callback for _, _, cb in waiter.watch._armed.values()),
        what="the watch to re-arm on the new folder",
    )
    assert waiter.watch.mode == "inotify"
    block.unlink()
    assert waiter.outcome() == "gone"


def test_falls_back_to_polling_when_inotify_is_exhausted(
    block: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def exhausted() -> Any:
        raise OSError(errno.EMFILE, "inotify instance limit reached")

    waiter = Waiter(block, reader_factory=exhausted).start()
    assert waiter.watch.mode == "polling"
    block.unlink()
    assert waiter.outcome() == "gone"
    waiter.close()


def test_falls_back_when_the_watch_limit_is_reached(block: Path) -> None:
    class NoWatches:
        def add_callback(self, *args: Any) -> int:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

        def is_alive(self) -> bool:
            return True

        def stop(self) -> None:
            pass

        def join(self, timeout: float) -> None:
            pass

    waiter = Waiter(block, reader_factory=NoWatches).start()
    assert waiter.watch.mode == "polling"
    block.unlink()
    assert waiter.outcome() == "gone"
    waiter.close()


def test_an_exception_in_the_handler_does_not_end_the_watch(
    waiter: Waiter, block: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = FolderWatch._notify
    calls = {"n": 0}

    def flaky(self: FolderWatch, folder: Path, *, dead: bool) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("handler bug")
        real(self, folder, dead=dead)

    monkeypatch.setattr(FolderWatch, "_notify", flaky)
    waiter.settle()  # the first event hits the bug
    assert calls["n"] >= 1
    assert waiter.watch._reader.is_alive()
    block.unlink()
    assert waiter.outcome() == "gone"


def test_a_dead_reader_thread_is_replaced(waiter: Waiter, block: Path) -> None:
    dead = waiter.watch._reader
    dead.stop()
    dead.join(5)
    waiter.wake.set()  # the next look re-arms with a fresh reader
    wait_until(lambda: waiter.watch._reader is not dead and waiter.watch._armed)
    block.unlink()
    assert waiter.outcome() == "gone"


def test_stop_and_deadline(block: Path) -> None:
    wake, stop = threading.Event(), threading.Event()
    with FolderWatch([block.parent], wake) as watch:
        deadline = time.monotonic() + 0.05
        assert wait_unblock(block, watch, wake, stop, deadline=deadline) == "timeout"
        stop.set()
        assert wait_unblock(block, watch, wake, stop, deadline=None) == "stopped"


def test_a_missing_subfolder_is_armed_when_created_without_polling(ws: Path) -> None:
    wake = threading.Event()
    requests_dir = ws / "requests"
    with FolderWatch([ws, requests_dir], wake) as watch:
        assert watch.timeout_hint == 2.0  # no polling: the parent's watch will see it come
        wake.clear()
        requests_dir.mkdir()
        assert wake.wait(5)
        watch.ensure()
        assert requests_dir in watch._armed
        wake.clear()
        (requests_dir / "r1.json").write_text("{}")
        assert wake.wait(5)


# --- under load: decided by event, not by a window (SPEC §27) ---------------------------


@pytest.fixture
def cpu_hogs() -> Iterator[None]:
    """Two busy processes per CPU for the length of the test: a loaded machine."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def slow_jetbrains_safe_write(path: Path) -> None:
    """JetBrains' safe-write with the original away for far longer than any window."""
    tmp = path.with_name("BLOCKED.md___jb_tmp___")
    old = path.with_name("BLOCKED.md___jb_old___")
    tmp.write_text("# Blocked\nsafe write\n")
    os.rename(path, old)
    time.sleep(0.3)  # the scenario: a slow disk, a loaded machine
    os.rename(tmp, path)
    old.unlink()


def slow_vim_backup_rename(path: Path) -> None:
    """vim's 4913 probe, then its write-backup: the original renamed to ``BLOCKED.md~``,
    a new file written a long while later."""
    probe = path.with_name("4913")
    probe.touch()
    probe.unlink()
    os.rename(path, path.with_name("BLOCKED.md~"))
    time.sleep(0.3)
    path.write_text("# Blocked\nwritten anew\n")
    path.with_name("BLOCKED.md~").unlink()


def slow_vim_copy_delete_write(path: Path) -> None:
    """vim with its backup on another file system, slowly: probe, copy, delete, write —
    its swap file beside the file all along."""
    swap = path.with_name(".BLOCKED.md.swp")
    swap.write_bytes(b"b0VIM 9.0")
    probe = path.with_name("4913")
    probe.touch()
    probe.unlink()
    path.unlink()
    time.sleep(0.3)
    path.write_text("# Blocked\nwritten anew\n")
    swap.unlink()


@pytest.mark.parametrize(
    "save", [slow_jetbrains_safe_write, slow_vim_backup_rename, slow_vim_copy_delete_write]
)
def test_a_slow_editor_save_under_load_is_never_an_unblock(
    cpu_hogs: None, waiter: Waiter, block: Path, save: Any
) -> None:
    for _ in range(3):
        save(block)
        waiter.settle()
        assert waiter.result is None, f"{save.__name__} was taken for an unblock under load"
    block.unlink()
    assert waiter.outcome() == "gone"  # and rm still is one


def test_a_folder_swap_under_load_is_never_an_unblock(
    cpu_hogs: None, ws: Path, tmp_path: Path
) -> None:
    inner = ws / "work"
    inner.mkdir()
    block = inner / "BLOCKED.md"
    block.write_text("# Blocked\n")
    waiter = Waiter(block).start()
    try:
        for n in range(3):
            fresh = ws / f"work.new{n}"
            fresh.mkdir()
            (fresh / "BLOCKED.md").write_text(f"# Blocked\nswapped {n}\n")
            os.rename(inner, ws / f"work.old{n}")
            os.rename(fresh, inner)
            waiter.settle()
            assert waiter.result is None, "a folder swap was taken for an unblock"
        block.unlink()
        assert waiter.outcome() == "gone"
    finally:
        waiter.close()


def test_rm_is_an_unblock_at_once_under_load(cpu_hogs: None, waiter: Waiter, block: Path) -> None:
    block.unlink()
    assert waiter.outcome(timeout=10) == "gone"
