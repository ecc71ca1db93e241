"""``loopkit requests``: the list of this workspace's requests, oldest first."""

from __future__ import annotations

import json

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_OK
from loopkit.requests.table import listing, render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


def list_requests(app: App, *, status: str | None, kind: str | None, as_json: bool) -> int:
    app.config(anywhere=True)
    rows, problems = listing(app.store(), status=status, kind=kind)
    echo(json.dumps(rows, ensure_ascii=False) if as_json else render(rows))
    for problem in problems:
        echo(f"loopkit: warning: {problem}", err=True)
    return EXIT_OK
