"""``loopkit reply`` and ``loopkit unblock``: a human's answer, from a shell (never an
agent's) — and who that human is."""

from __future__ import annotations

import getpass
import json
import os

from loopkit import agentsession
from loopkit.commands.echo import echo
from loopkit.errors import EXIT_OK, AgentAnswer, RequestNotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.app import App


def refuse_agents() -> None:
    """Only a human answers (SPEC section 11): never a process of a supervised agent."""
    if agentsession.inside():
        raise AgentAnswer(agentsession.REFUSAL)


def human() -> str:
    """Who is answering from this shell: $LOOPKIT_HUMAN, else the login name."""
    try:
        return os.environ.get("LOOPKIT_HUMAN") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def reply(
    app: App, *, request_id: str, reply: str, expected_updated_at: str | None, by: str | None
) -> int:
    from loopkit.fleet.route import answer_anywhere
    from loopkit.requests.reading import told_back

    refuse_agents()
    app.config(anywhere=True)
    try:
        result, _ = answer_anywhere(
            request_id, reply, by=by or human(), via="cli", here=app.store(), stores=app.stores(),
            hubs=app.hubs, expected_updated_at=expected_updated_at,
        )  # fmt: skip
    except RequestNotFound as exc:
        if app.in_workspace():
            raise
        # reply answers a request anywhere; a wrong folder may still be why it is not found.
        raise RequestNotFound(f"{exc} ({app.root} is not a loopkit workspace)") from None
    echo(json.dumps(result.decision, ensure_ascii=False))
    echo(told_back(result.record), err=True)
    if result.deferred:
        echo(f"deferred: request {request_id} stays open", err=True)
    return EXIT_OK


def unblock(app: App, *, reply: str | None, by: str | None) -> int:
    from loopkit.escalation.unblock import unblock as do_unblock

    refuse_agents()
    app.require_workspace()  # never "not blocked" for a folder that is no loop's
    outcome = do_unblock(app.config(), reply=reply, by=by or human(), store=app.store())
    if outcome.decision is not None:
        echo(json.dumps(outcome.decision, ensure_ascii=False))
    if outcome.reading is not None:
        echo(outcome.reading, err=True)
    echo(outcome.message, err=True)
    return EXIT_OK
