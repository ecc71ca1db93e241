"""The inbox's one-tap answers (SPEC section 29): the buttons of a phone push (ntfy's
``http`` actions) POST here, with no session cookie — the signed URL is the permission
(:mod:`loopkit.home.taps`).

``/t/<workspace>/<request>/<choice>?p=<person>&e=<expires>&s=<signature>``:

- ``POST`` answers the request with that choice, through the answering service, as the
  person the push was sent to (``via: "ntfy"``): 200 and how it was read. The one who
  tapped then gets the reading as a follow-up push, and everyone else asked is told
  (:class:`~loopkit.answering.telling.FollowUps`).
- ``GET`` (a ``view`` action, a browser) shows the choice with a button that POSTs it; for
  an approval that cannot be undone it is the confirm page, and only its button (``confirm
  = 1``) records the approval: two taps, as everywhere (SPEC §16).

Refusals, as plain text: a signature that does not verify 403 (a wrong one counts against
the sender as a wrong inbox token does: 429 after too many); the tap or its request expired
410; the tap used already, or the request answered another way, 409 — and the late tapper
is told who was first, in a push. An agent's process is refused as in the inbox (403).
"""

from __future__ import annotations

import threading
from urllib.parse import parse_qs

from starlette.responses import PlainTextResponse
from starlette.routing import Route

from loopkit.answering.service import Confirm
from loopkit.answering.who import Answerer, Tap
from loopkit.errors import AgentAnswer, LoopkitError, NotAllowed, RequestConflict
from loopkit.home import home, taps
from loopkit.inbox import pages
from loopkit.inbox.guard import body_within
from loopkit.log import get_logger
from loopkit.message import LETTERS, fold
from loopkit.requests.irreversible import confirm_question, needs_second_tap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

    from loopkit.inbox.web import Inbox

log = get_logger("loopkit.inbox")

MAX_FORM = 4096  # the confirm page's form: two fields


def routes(
    inbox: Inbox,
    *,
    page: Callable[..., Response],
    headers: dict[str, str],
) -> list[Route]:
    def text(body: str, status: int) -> Response:
        return PlainTextResponse(body + "\n", status, headers=headers)

    def parsed(request: HttpRequest) -> tuple[taps.Tap, str] | None:
        params = request.path_params
        query = request.query_params
        index, expires = str(params["index"]), query.get("e", "")
        if not (index.isdigit() and len(index) == 1 and expires.isdigit()):
            return None
        tap = taps.Tap(params["key"], params["rid"], int(index), query.get("p", ""), int(expires))
        return tap, query.get("s", "")

    async def one(request: HttpRequest) -> Response:
        client = request.client.host if request.client else "?"
        found = parsed(request)
        if found is None or not taps.verifies(inbox.token.value(), *found):
            if inbox.throttle.miss(client):
                return text("429 Too Many Requests", 429)
            why = f"inbox: a one-tap link that does not verify, from {client}"
            log.warning("tap_bad_signature", client=client, msg=why)
            return text("403 Forbidden: this button's link is not valid (changed, or made "
                        "before the inbox token was rotated)", 403)  # fmt: skip
        tap, signature = found
        if taps.expired(tap):
            return text("410 Gone: this button expired with its question", 410)
        card = pages.find(tap.workspace, tap.request_id, inbox.stores, inbox.hubs)
        if card is None:
            return text("404 Not Found: no such question on this machine", 404)
        record = card.record
        if record.status == "expired":
            return text("410 Gone: the question expired before it was answered", 410)
        if tap.index >= min(len(record.options), len(LETTERS)):
            return text("404 Not Found: no such choice", 404)
        if not record.is_open or taps.spent(home(), tap, signature):
            return late(record, tap)
        reply = LETTERS[tap.index]
        if request.method == "GET":
            return ask(card, tap, request, confirm=needs_second_tap(record, reply))
        body = await body_within(request, MAX_FORM)
        form = {k: v[0] for k, v in parse_qs((body or b"").decode("utf-8", "replace")).items()}
        server = request.scope.get("server") or (None, None)
        who = Answerer(
            by=tap.person or inbox.user,
            via="ntfy",
            origin=Tap(tap.person, request.client, server[1]),
        )
        try:
            done = inbox.answering.answer(
                tap.request_id, reply, who, confirmed=form.get("confirm") == "1"
            )
        except RequestConflict:
            fresh = pages.find(tap.workspace, tap.request_id, inbox.stores, inbox.hubs)
            return late(fresh.record if fresh else record, tap)
        except (AgentAnswer, NotAllowed) as exc:
            return text(f"403 Forbidden: {exc}", 403)
        except LoopkitError as exc:
            return text(f"400 Bad Request: {exc}", 400)
        if isinstance(done, Confirm):  # an http action on a choice that takes two taps
            return ask(card, tap, request, confirm=True, status=409)
        taps.spend(home(), tap, signature)
        caveat = f" — {done.caveat}" if done.caveat else ""
        return text(f"recorded: {done.reading}{caveat}", 200)

    def late(record: Any, tap: taps.Tap) -> Response:
        """The tap came too late: 409, and the tapper is told who was first (a push) —
        unless it was their own answer, tapped again."""
        if not record.is_open:
            res = record.resolution
            tapper = (tap.person or inbox.user).casefold()  # as the answer was recorded
            theirs = res is not None and res.via == "ntfy" and (res.by or "").casefold() == tapper
            if not theirs:
                person = tap.person or None
                threading.Thread(
                    target=inbox.followups.late, args=(record, person), daemon=True
                ).start()
            who = f" by {res.by} via {res.via}" if res is not None and res.by else ""
            return text(f"409 Conflict: already {record.status}{who}", 409)
        return text("409 Conflict: this button was used already", 409)

    def ask(
        card: pages.Card, tap: taps.Tap, request: HttpRequest, *, confirm: bool, status: int = 200
    ) -> Response:
        option = card.record.options[tap.index]
        question = (
            confirm_question(card.record)
            if confirm
            else f"Answer {LETTERS[tap.index]}) {fold(option.label, 80)}?"
        )
        return page(
            "tap.html.j2",
            status,
            title=card.repo,
            card=card,
            question=question,
            action=f"{request.url.path}?{request.url.query}",
            confirm=confirm,
            button="Yes, approve" if confirm else f"{LETTERS[tap.index]}) {fold(option.label, 40)}",
        )

    return [Route("/t/{key}/{rid}/{index}", one, methods=["GET", "POST"])]
