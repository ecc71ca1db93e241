"""An answer (or a dismissal) finds its request wherever it is: a registered workspace of
this machine, or — with a fleet — another machine's (through the hub's compare-and-set and
NOTIFY)."""

from __future__ import annotations

from loopkit.errors import RequestNotFound
from loopkit.escalation.dismiss import dismiss
from loopkit.requests.answer import answer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.fleet import Hubs
    from loopkit.requests.answer import Answer
    from loopkit.requests.locate import Stores
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore


def answer_anywhere(
    request_id: str,
    reply: str,
    *,
    by: str,
    via: str,
    here: RequestStore | None,
    stores: Stores,
    hubs: Hubs,
    about: dict[str, Any] | None = None,
    expected_updated_at: str | None = None,
) -> tuple[Answer, RequestStore | None]:
    """Answer ``request_id``; returns the answer and the local store that holds it (None when
    another machine does). A local request is claimed through its own store's hub; another
    machine's through the fleet that holds it. Errors as
    :func:`~loopkit.requests.answer.answer`'s."""
    store = stores.holding(request_id, here)
    if store is None:
        found = hubs.find(request_id)
        if found is not None:
            hub, remote = found
            return hub.answer_remote(remote, reply, by=by, via=via, about=about), None
        where = "on this machine or in the fleet" if hubs.fleets() else "on this machine"
        raise RequestNotFound(
            f"no request {request_id!r} {where}; `loopkit inbox` lists the open ones"
        )  # before any lock: a command that answers never makes a workspace
    result = answer(
        store,
        request_id,
        reply,
        by=by,
        via=via,
        about=about,
        expected_updated_at=expected_updated_at,
    )
    return result, store


def dismiss_anywhere(
    request_id: str,
    *,
    by: str,
    via: str,
    reason: str | None,
    here: RequestStore | None,
    stores: Stores,
    hubs: Hubs,
) -> tuple[Request, bool, str | None]:
    """Dismiss ``request_id`` wherever it is (SPEC §16): the record, whether its BLOCKED.md
    was removed here, and the machine that holds it when that is another one (its owner
    lifts the block when it applies the dismissal). Errors as
    :func:`~loopkit.escalation.dismiss.dismiss`'s."""
    store = stores.holding(request_id, here)
    if store is None:
        found = hubs.find(request_id)
        if found is not None:
            hub, remote = found
            record = hub.dismiss_remote(remote, by=by, via=via, reason=reason)
            return record, False, remote.machine
        where = "on this machine or in the fleet" if hubs.fleets() else "on this machine"
        raise RequestNotFound(
            f"no request {request_id!r} {where}; `loopkit inbox` lists the open ones"
        )  # before any lock: a command that closes a request never makes a workspace
    done = dismiss(store, request_id, by=by, via=via, reason=reason)
    return done.record, done.removed, None
