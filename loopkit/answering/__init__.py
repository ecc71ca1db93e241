"""Answering: the one door an answer, a dismissal or a lifted block comes in by (SPEC §27).

:class:`~loopkit.answering.service.Answering` is the service every surface calls;
:mod:`~loopkit.answering.who` says who may answer. :func:`answer`, :func:`dismiss` and
:func:`unblock` are the Python API: a human at this machine, checked as ``loopkit reply``,
``dismiss`` and ``unblock`` are (refused from inside a supervised agent's session).
"""

from __future__ import annotations

from loopkit.answering.service import Answered, Answering, Dismissed, Unblocked
from loopkit.answering.who import Answerer
from loopkit.fleet import Hubs
from loopkit.requests.locate import Stores

__all__ = ["Answered", "Answerer", "Answering", "Dismissed", "Unblocked", "answer", "dismiss",
           "unblock"]  # fmt: skip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.requests.store import RequestStore


def _service(store: RequestStore) -> Answering:
    """A service for ``store``'s workspace first, then the machine's others and the fleet."""
    return Answering(stores=Stores(lambda _config: store.hub), hubs=Hubs(), here=store)


def answer(
    store: RequestStore,
    request_id: str,
    reply: str,
    *,
    by: str,
    via: str = "api",
    expected_updated_at: str | None = None,
    about: dict[str, Any] | None = None,
) -> Answered:
    """Answer ``request_id`` as ``by``: recorded once, its block lifted. A reply given on the
    command line or from code is deliberate: a P0 approval needs no second tap."""
    done = _service(store).answer(
        request_id,
        reply,
        Answerer(by=by, via=via, about=about),
        confirmed=True,
        expected_updated_at=expected_updated_at,
    )
    assert isinstance(done, Answered)  # confirmed: never a Confirm
    return done


def dismiss(
    store: RequestStore, request_id: str, *, by: str, via: str = "api", reason: str | None = None
) -> Dismissed:
    """Close ``request_id``, which nobody will answer: never an answer (SPEC §16)."""
    return _service(store).dismiss(request_id, Answerer(by=by, via=via), reason=reason)


def unblock(
    store: RequestStore, *, by: str, via: str = "api", reply: str | None = None
) -> Unblocked:
    """Lift the block of ``store``'s workspace: answer its request with ``reply``, or
    resolve it as unblocked by hand; then ``BLOCKED.md`` goes."""
    return _service(store).unblock(store, Answerer(by=by, via=via), reply=reply)
