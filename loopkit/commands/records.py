"""The bodies of ``loopkit rules`` (list, ``rm N``) and ``loopkit audit verify``."""

from __future__ import annotations

import json

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_DATAERR, EXIT_OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.commands.app import App


def list_rules(app: App, *, as_json: bool) -> int:
    from loopkit.escalation import allow

    root = app.config().workspace
    found = allow.load(root)
    if as_json:
        rows = [{"number": n, **rule.to_dict()} for n, rule in enumerate(found, start=1)]
        echo(json.dumps(rows, ensure_ascii=False))
        return EXIT_OK
    if not found:
        echo(f"no standing approvals ({allow.FILE} has none)")
    for number, rule in enumerate(found, start=1):
        echo(f"{number}. {rule.shown()}")
    return EXIT_OK


def remove_rule(app: App, *, number: int) -> int:
    from loopkit import log
    from loopkit.escalation import allow

    root = app.config().workspace
    gone = allow.remove(root, number)
    log.get_logger("loopkit.gate").info(
        "gate_rule_removed",
        **gone.logged(number),
        workspace=str(root),
        msg=f"standing rule {number} removed: {gone.shown()}",
    )
    echo(f"removed rule {number}: {gone.shown()}")
    return EXIT_OK


def verify(app: App) -> int:
    from loopkit.audit.chain import Trail
    from loopkit.audit.chain import verify as check
    from loopkit.workspace import Workspace

    app.require_workspace()  # never "the chain holds" for a folder that is no loop's
    workspace = Workspace.of(app.config())
    trail = Trail(workspace.state_dir)
    verdict = check(trail, name=str(trail.path.relative_to(workspace.root)))
    for note in verdict.notes:
        echo(f"loopkit: note: {note}", err=True)
    if verdict.problem is not None:
        echo(f"{verdict.problem}", err=True)
        return EXIT_DATAERR
    echo(f"{verdict.lines} line(s): the chain holds")
    return EXIT_OK
