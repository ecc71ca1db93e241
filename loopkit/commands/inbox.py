"""``loopkit inbox``: every open question of this machine's loops, oldest first."""

from __future__ import annotations

import json

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_OK
from loopkit.inbox.entries import open_requests, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


def inbox(app: App, *, as_json: bool) -> int:
    app.config(anywhere=True)
    entries = open_requests(app.stores(), app.hubs)
    if as_json:
        echo(json.dumps([e.row() for e in entries], ensure_ascii=False))
    else:
        echo(render(entries))
    return EXIT_OK
