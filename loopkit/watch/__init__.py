"""Watching the file system, hiding watchdog: the wake-up, the folder watch, the waits.

- :mod:`~loopkit.watch.wake`: ``Wake``, an event with a file descriptor (one ``select``).
- :mod:`~loopkit.watch.folder`: ``FolderWatch``, inotify on folders (polling as fallback).
- :mod:`~loopkit.watch.waits`: the one deadline loop, and "wait until BLOCKED.md is gone".
"""
