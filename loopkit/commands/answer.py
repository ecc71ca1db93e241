"""``loopkit reply``, ``unblock`` and ``dismiss``: a human's answer from a shell (never an
agent's) — each one call of the answering service, its result printed."""

from __future__ import annotations

import getpass
import json
import os

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_OK, EXIT_TEMPFAIL, RequestNotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.answering.service import Answered, Answering
    from loopkit.answering.who import Answerer
    from loopkit.commands.app import App
    from loopkit.requests.record import Request


def human() -> str:
    """Who is answering from this shell: $LOOPKIT_HUMAN, else the login name."""
    try:
        return os.environ.get("LOOPKIT_HUMAN") or getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _door(app: App, by: str | None) -> tuple[Answering, Answerer]:
    """The answering service for this invocation, and this shell's human. An agent's
    process is refused before any config is read (the service checks it again)."""
    from loopkit.answering.who import Answerer

    who = Answerer(by=by or human(), via="cli")
    who.check()
    app.config(anywhere=True)
    return app.answering(), who


def reply(
    app: App, *, request_id: str, reply: str, expected_updated_at: str | None, by: str | None
) -> int:
    from loopkit.answering.policy import OVERRIDE, by_policy
    from loopkit.answering.service import Answered

    service, who = _door(app, by)
    if reply.strip().lower() == OVERRIDE:
        found = service.find(request_id)
        if found is not None and by_policy(found):  # SPEC §30: a human takes the question back
            echo(service.override(request_id, who).message, err=True)
            return EXIT_OK
    try:
        done = service.answer(
            request_id, reply, who, confirmed=True, expected_updated_at=expected_updated_at
        )  # typed on purpose: no second tap
    except RequestNotFound as exc:
        if app.in_workspace():
            raise
        # reply answers a request anywhere; a wrong folder may still be why it is not found.
        raise RequestNotFound(f"{exc} ({app.root} is not a loopkit workspace)") from None
    assert isinstance(done, Answered)  # confirmed: never a Confirm
    echo(json.dumps(done.decision, ensure_ascii=False))
    echo(done.reading, err=True)
    if done.deferred:
        echo(f"deferred: request {request_id} stays open", err=True)
    _tell_the_asked(service, done.record)
    return _partition_told(done)


def _partition_told(done: Answered) -> int:
    """75 and the truth when the answer could not be claimed fleet-wide (SPEC §28)."""
    if done.caveat is None:
        return EXIT_OK
    echo(f"loopkit: {done.caveat}", err=True)
    return EXIT_TEMPFAIL


def _tell_the_asked(service: Answering, record: Request) -> None:
    """The people asked where a message cannot be edited (an ntfy push, a PagerDuty
    incident) are told how it ended now, before this short process exits (SPEC §29);
    nothing is loaded for a block that went out elsewhere."""
    if record.is_open or not any(
        e.channel in ("ntfy", "pagerduty") and e.ok is True for e in record.delivery
    ):
        return
    from loopkit.answering.telling import FollowUps

    FollowUps(service).show_outcome(record)


def unblock(app: App, *, reply: str | None, by: str | None) -> int:
    service, who = _door(app, by)
    app.require_workspace()  # never "not blocked" for a folder that is no loop's
    outcome = service.unblock(app.store(), who, reply=reply)
    if outcome.answered is not None:
        echo(json.dumps(outcome.answered.decision, ensure_ascii=False))
        echo(outcome.answered.reading, err=True)
        _tell_the_asked(service, outcome.answered.record)
    echo(outcome.message, err=True)
    return EXIT_OK if outcome.answered is None else _partition_told(outcome.answered)


def dismiss(app: App, *, request_id: str, reason: str | None, by: str | None) -> int:
    service, who = _door(app, by)
    done = service.dismiss(request_id, who, reason=reason)
    echo(done.message, err=True)
    _tell_the_asked(service, done.record)
    return EXIT_OK
