"""``loopkit ps``: every loop of this machine (with a fleet, of every machine).

Its plain forms (``ps``, ``ps --json``) are answered by :func:`print_loops` straight from
:mod:`loopkit.main`, before an App is made: the fleet's hubs, and its libraries, are made
here only when ``LOOPKIT_FLEET_DSN`` names a fleet (``ps`` without one stays fast).
"""

from __future__ import annotations

import json
import os
import sys

from loopkit.loops import all_loops, loops, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App
    from loopkit.loops import Loop


def ps(app: App, *, as_json: bool) -> int:
    """Works from any folder: the workspace found is not used (``ps`` alone, without ``-C``
    or ``-v``, is answered in :mod:`loopkit.main` before an App is made)."""
    return print_loops(as_json=as_json)


def print_loops(*, as_json: bool) -> int:
    """``loopkit ps`` (its fast path, and the click command's body): exit 0."""
    found = env_fleet_loops()
    if as_json:
        text = json.dumps([one.to_dict() for one in found], ensure_ascii=False)
    else:
        text = render(found)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `loopkit ps | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def env_fleet_loops() -> list[Loop]:
    """:func:`~loopkit.loops.all_loops`, with the fleet ``LOOPKIT_FLEET_DSN`` names when it
    is set (the fleet's libraries load only then: ``ps`` without a fleet stays fast)."""
    if not os.environ.get("LOOPKIT_FLEET_DSN", "").strip():
        return loops()
    from loopkit.fleet import Hubs

    hubs = Hubs()
    try:
        return all_loops(hubs)
    finally:
        hubs.close()
