"""Dry runs: ``ask``'s own code path, stopped where it would write.

A :class:`PreviewStore` reads the workspace's requests like the real store and writes
nothing — no record, no lock file, no folder. Handed to
:func:`loopkit.escalation.ask.ask` (never with ``block``), it makes every decision the real
call makes (needs_human, the rubric, the options, the review's https link, the timeout) and
returns the record that would have been written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore


class PreviewStore(RequestStore):
    """A request store that reads and never writes."""

    writes = False

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        yield  # nothing is written, so nothing needs the lock (or its file)

    def _write(self, record: Request, *, durable: bool = True) -> None:
        """Write nothing: a preview's record is returned, never stored."""
