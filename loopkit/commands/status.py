"""``loopkit status``: the supervisor's state, from the workspace's files."""

from __future__ import annotations

import json

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_OK
from loopkit.escalation import repair
from loopkit.supervisor.status import render
from loopkit.supervisor.status import status as read_status

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


def status(app: App, *, as_json: bool) -> int:
    app.require_workspace()  # never "idle" for a folder that is no loop's
    config = app.config(anywhere=True)
    if repair.needed(config, app.store()):
        repair.repair(app.escalator(config))  # a block a crash left half-raised
    info = read_status(config, store=app.store())
    echo(json.dumps(info) if as_json else render(info))
    return EXIT_OK
