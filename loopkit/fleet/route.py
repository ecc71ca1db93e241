"""An answer finds its request wherever it is: a registered workspace of this machine, or
— with a fleet — another machine's (through the hub's compare-and-set and NOTIFY)."""

from __future__ import annotations

from typing import Any

from loopkit.errors import RequestNotFound
from loopkit.requests import hub
from loopkit.requests.answer import Answer, answer
from loopkit.requests.locate import store_holding
from loopkit.requests.store import RequestStore


def answer_anywhere(
    request_id: str,
    reply: str,
    *,
    by: str,
    via: str,
    here: RequestStore | None,
    about: dict[str, Any] | None = None,
    expected_updated_at: str | None = None,
) -> tuple[Answer, RequestStore | None]:
    """Answer ``request_id``; returns the answer and the local store that holds it (None when
    another machine does). Errors as :func:`~loopkit.requests.answer.answer`'s."""
    store = store_holding(request_id, here) if here is not None else None
    if store is None or not store.path(request_id).exists():
        remote = hub.current().find(request_id)
        if remote is not None:
            return hub.current().answer_remote(remote, reply, by=by, via=via, about=about), None
    if store is None:
        raise RequestNotFound(f"no request {request_id!r} on this machine or in the fleet")
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
