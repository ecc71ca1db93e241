"""What a machine publishes of its loops to the fleet, and how often (SPEC section 22) —
apart from :mod:`~loopkit.fleet.states`, which speaks to the database, so that a supervisor
without a fleet hands this over without loading psycopg."""

from __future__ import annotations

import threading
from typing import Protocol

from loopkit.datarecord import field, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from loopkit.home import Registered

BEAT = 10.0  # seconds between a machine's refreshes of its loops' rows
STALE_BEATS = 3  # beats without a refresh: the row is stale (its machine not heard from)
CATCH_UP = 3.0  # seconds a supervisor waits at most for its follower's first look


class Describe(Protocol):
    """Reads one registered workspace's row; ``exiting``: the pid of a supervisor about to
    end (its last row), read as gone — the state ``ps`` reads once it is."""

    def __call__(
        self, registered: Registered, /, *, exiting: int | None = None
    ) -> Mapping[str, Any]: ...


@record(frozen=True, slots=True)
class Publishing:
    """What a follower publishes: ``describe`` reads one registered workspace's row
    (:func:`loopkit.loops.describe`); ``own`` is the supervisor's workspace (None for
    ``serve``: every registered loop of the fleet, and the rows of workspaces no longer
    registered go); ``changed`` is set when ``own``'s state changed, so that it is published
    within a second. The follower sets ``caught_up`` once its first look is done (or the
    database could not be reached): a supervisor waits on it, briefly, before its first
    iteration, so a pause given while no loopkit ran on its machine holds from the start."""

    describe: Describe
    own: Registered | None = None
    changed: threading.Event = field(default_factory=threading.Event)
    caught_up: threading.Event = field(default_factory=threading.Event)
