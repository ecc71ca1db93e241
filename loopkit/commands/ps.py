"""``loopkit ps``: every loop of this machine (with a fleet, of every machine)."""

from __future__ import annotations

from loopkit.loops import print_loops

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


def ps(app: App, *, as_json: bool) -> int:
    """Works from any folder: the workspace found is not used (``ps`` alone, without ``-C``
    or ``-v``, is answered in :mod:`loopkit.main` before an App is made)."""
    return print_loops(as_json=as_json)
