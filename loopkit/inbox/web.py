"""The web inbox (SPEC section 11): server-rendered pages, no JavaScript needed, one small
script of loopkit's own for live updates. Every asset is served from here.

Routes: ``/`` (open requests), ``/r/<workspace>/<id>`` (one request), ``POST
/r/<workspace>/<id>/answer``, ``POST /r/<workspace>/<id>/dismiss``, ``/history``,
``/loops`` and its buttons (:mod:`~loopkit.inbox.loops`),
``/static/…``; ``/healthz`` is the one route
without auth and it says nothing but "ok" — but for ``/t/…``, the one-tap answers of a
phone push, whose signed URL is their permission (:mod:`~loopkit.inbox.onetap`).
Everything else needs a session (the cookie) or the token (``?token=``, exchanged for the
cookie and a redirect without it); without either it is 401 and nothing else. Every
change is a POST with the session's CSRF token. Approving an irreversible request and
dismissing one take two taps: the first POST shows a page that asks again and records
nothing; its form posts once more with ``confirm=1``.

An answer is refused (403, "an agent cannot answer …") when the browser's connection comes
from a process inside a supervised agent's session (:mod:`loopkit.agentsession`).
"""

from __future__ import annotations

import getpass
import threading
from collections.abc import Awaitable, Callable
from importlib import resources
from urllib.parse import parse_qs, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from loopkit.answering.service import FLEET_UNREACHABLE, Answering, Confirm
from loopkit.answering.telling import FollowUps
from loopkit.answering.who import Answerer, Browser
from loopkit.datarecord import field, record
from loopkit.errors import AgentAnswer, LoopkitError, RequestConflict
from loopkit.inbox import pages
from loopkit.inbox.auth import COOKIE, SESSION_DAYS, Sessions
from loopkit.inbox.guard import body_within
from loopkit.inbox.loops import routes as loop_routes
from loopkit.inbox.onetap import routes as tap_routes
from loopkit.log import get_logger
from loopkit.requests.answer import parse_for
from loopkit.requests.irreversible import always

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.fleet import Hubs
    from loopkit.inbox.auth import InboxToken, Throttle
    from loopkit.requests.locate import Stores

log = get_logger("loopkit.inbox")

STATIC = {"inbox.css": "text/css", "inbox.js": "text/javascript"}
HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'self'; img-src 'self'; style-src 'self'; "
    "script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
}
MAX_FORM = 64 * 1024  # a form's body: more is refused while it is read (413)
TOO_LARGE = f"413 Content Too Large: a form is at most {MAX_FORM // 1024} KiB\n"
CLOSE = {"Connection": "close"}  # the rest of a body too large is not read: the link closes

Handler = Callable[[HttpRequest, str], Awaitable[Response]]


@record
class Inbox:
    token: InboxToken
    user: str
    throttle: Throttle
    stores: Stores
    hubs: Hubs
    _answering: Answering | None = field(default=None, repr=False)
    _followups: FollowUps | None = field(default=None, repr=False)

    @property
    def sessions(self) -> Sessions:
        return Sessions(self.token)

    @property
    def answering(self) -> Answering:
        """The answering service every change of the inbox goes through."""
        if self._answering is None:
            self._answering = Answering(stores=self.stores, hubs=self.hubs)
        if self._followups is None:  # one of its tellers, from the first answer on
            self._followups = FollowUps(self._answering)
        return self._answering

    @property
    def followups(self) -> FollowUps:
        """Who else was asked, told how a question ended; a PagerDuty incident acknowledged
        when its request is opened here (SPEC §29)."""
        self.answering  # noqa: B018  (made with the service)
        assert self._followups is not None
        return self._followups


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("loopkit.inbox", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def _client(request: HttpRequest) -> str:
    return request.client.host if request.client else "?"


def app(inbox: Inbox) -> Starlette:
    templates = _templates()
    where = (inbox.stores, inbox.hubs)
    static = {
        name: (resources.files("loopkit.inbox") / "static" / name).read_bytes() for name in STATIC
    }

    def page(name: str, status: int = 200, **values: Any) -> Response:
        html = templates.get_template(name).render(**values)
        return Response(html, status, media_type="text/html; charset=utf-8", headers=HEADERS)

    def unauthorized() -> Response:
        return PlainTextResponse("401 Unauthorized\n", 401, headers=HEADERS)

    def authed(handler: Handler) -> Callable[[HttpRequest], Awaitable[Response]]:
        async def wrapped(request: HttpRequest) -> Response:
            client = _client(request)
            given = request.query_params.get("token")
            if given is not None:
                if not inbox.sessions.token_matches(given):
                    # Wrong tokens lock out whoever presents them, never the token: the right
                    # one is let in from anywhere (SPEC §28; behind a loopback proxy every
                    # presenter has one address, the human's phone too).
                    if inbox.throttle.miss(client):
                        return PlainTextResponse("429 Too Many Requests\n", 429, headers=HEADERS)
                    log.warning(
                        "inbox_bad_token", client=client, msg=f"inbox: wrong token from {client}"
                    )
                    return unauthorized()
                # The token becomes a cookie; the address bar loses it.
                kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                query = urlencode(kept)
                target = request.url.path + (f"?{query}" if query else "")
                response = RedirectResponse(target, 303, headers=HEADERS)
                response.set_cookie(
                    COOKIE,
                    inbox.sessions.new_session(),
                    max_age=SESSION_DAYS * 86400,
                    httponly=True,
                    samesite="strict",
                    path="/",
                )
                return response
            nonce = inbox.sessions.valid_session(request.cookies.get(COOKIE))
            if nonce is None:
                return unauthorized()
            return await handler(request, nonce)

        return wrapped

    async def listing(request: HttpRequest, nonce: str) -> Response:
        cards = pages.open_cards(inbox.stores, inbox.hubs)
        name = "_list.html.j2" if request.query_params.get("fragment") else "list.html.j2"
        return page(name, cards=cards, csrf=inbox.sessions.csrf(nonce), title="Inbox")

    async def one(request: HttpRequest, nonce: str) -> Response:
        card = pages.find(request.path_params["key"], request.path_params["rid"], *where)
        if card is None:
            return page("missing.html.j2", 404, title="Not found")
        if request.query_params.get("fragment"):
            return PlainTextResponse(card.record.status, headers=HEADERS)
        if card.record.is_open and card.machine is None:
            # Someone is looking at it: its PagerDuty incident is acknowledged (SPEC §29).
            rid = card.record.request_id
            threading.Thread(target=inbox.followups.opened, args=(rid,), daemon=True).start()
        return page(
            "request.html.j2",
            card=card,
            csrf=inbox.sessions.csrf(nonce),
            title=card.repo,
            done=request.query_params.get("done") in ("1", "here"),
            caveat=FLEET_UNREACHABLE if request.query_params.get("done") == "here" else None,
            evidence=pages.evidence_of(card, inbox.stores),
        )

    async def posted(
        request: HttpRequest, nonce: str
    ) -> tuple[dict[str, str], pages.Card] | Response:
        """A change's form and its request — or the refusal: a stale form token (403), no
        such request (404), a browser inside a supervised agent's session (403)."""
        body = await body_within(request, MAX_FORM)
        if body is None:
            return PlainTextResponse(TOO_LARGE, 413, headers={**HEADERS, **CLOSE})
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if not inbox.sessions.csrf_matches(nonce, form.get("csrf", "")):
            stale = "403 Forbidden: stale or missing form token; reload the page\n"
            return PlainTextResponse(stale, 403, headers=HEADERS)
        card = pages.find(request.path_params["key"], request.path_params["rid"], *where)
        if card is None:
            return page("missing.html.j2", 404, title="Not found")
        return form, card

    def answerer(request: HttpRequest) -> Answerer:
        """The human at this browser; the service refuses one an agent's process drives."""
        server = request.scope.get("server") or (None, None)
        return Answerer(by=inbox.user, via="inbox", origin=Browser(request.client, server[1]))

    def refused(exc: LoopkitError) -> Response:
        if isinstance(exc, AgentAnswer):
            return page("refused.html.j2", 403, title="Refused", message=str(exc))
        return page("refused.html.j2", 400, title="Not recorded", message=str(exc))

    def ask_again(nonce: str, card: pages.Card, question: str, action: str,
                  **values: Any) -> Response:  # fmt: skip
        """The second tap's page: ``question``, and a form that posts again with confirm=1."""
        values = {"fields": {}, "reason": False, **values}
        return page("confirm.html.j2", card=card, csrf=inbox.sessions.csrf(nonce),
                    title=card.repo, question=question, action=f"{card.url}/{action}",
                    **values)  # fmt: skip

    async def reply(request: HttpRequest, nonce: str) -> Response:
        checked = await posted(request, nonce)
        if isinstance(checked, Response):
            return checked
        form, card = checked
        text = (form.get("reply") or form.get("free") or "").strip()
        if card.record.kind == "review" and not form.get("checked") and _approves(card, text):
            return page(
                "request.html.j2",
                400,
                card=card,
                csrf=inbox.sessions.csrf(nonce),
                title=card.repo,
                done=False,
                need_check=True,
                evidence=None,
            )
        if not text:
            return RedirectResponse(card.url, 303, headers=HEADERS)
        try:
            done = inbox.answering.answer(
                card.record.request_id, text, answerer(request),
                confirmed=form.get("confirm") == "1",
            )  # fmt: skip
        except RequestConflict:
            fresh = pages.find(card.key, card.record.request_id, *where) or card
            return page("answered.html.j2", card=fresh, title="Already answered")
        except LoopkitError as exc:
            return refused(exc)
        if isinstance(done, Confirm):
            # An irreversible approval takes two taps (SPEC §16): this one recorded nothing.
            button = "Yes, allow always here" if always(done.record, text) else "Yes, approve"
            return ask_again(nonce, card, done.question, "answer",
                             fields={"reply": text}, button=button)  # fmt: skip
        # done=here: recorded on this machine only, the fleet unreachable (SPEC §28)
        said = "here" if done.caveat else "1"
        return RedirectResponse(f"{card.url}?done={said}", 303, headers=HEADERS)

    async def dismiss(request: HttpRequest, nonce: str) -> Response:
        """Close a request nobody will answer (SPEC §16): the first tap asks again, the
        second (confirm=1) dismisses it — never an answer — and lifts its own block."""
        checked = await posted(request, nonce)
        if isinstance(checked, Response):
            return checked
        form, card = checked
        if not card.record.is_open:
            return page("answered.html.j2", card=card, title="Already answered")
        if form.get("confirm") != "1":
            question = (
                "Dismiss this request? It closes with no answer: nothing is chosen or "
                "approved, and its BLOCKED.md goes."
            )
            return ask_again(nonce, card, question, "dismiss", button="Dismiss it", reason=True)
        try:
            inbox.answering.dismiss(
                card.record.request_id, answerer(request),
                reason=(form.get("reason") or "").strip() or None,
            )  # fmt: skip
        except RequestConflict:
            fresh = pages.find(card.key, card.record.request_id, *where) or card
            return page("answered.html.j2", card=fresh, title="Already answered")
        except LoopkitError as exc:
            return refused(exc)
        return RedirectResponse(card.url, 303, headers=HEADERS)

    async def past(request: HttpRequest, nonce: str) -> Response:
        return page("history.html.j2", cards=pages.history(inbox.stores), title="History")

    async def asset(request: HttpRequest, nonce: str) -> Response:
        name = request.path_params["name"]
        if name not in static:
            return PlainTextResponse("404 Not Found\n", 404, headers=HEADERS)
        headers = {**HEADERS, "Cache-Control": "private, max-age=300"}
        return Response(static[name], media_type=STATIC[name], headers=headers)

    async def healthz(request: HttpRequest) -> Response:
        return PlainTextResponse("ok\n")

    steering = loop_routes(
        page=page, authed=authed, csrf=inbox.sessions.csrf,
        csrf_matches=inbox.sessions.csrf_matches, user=inbox.user, headers=HEADERS,
        remote=inbox.hubs,
    )  # fmt: skip
    return Starlette(
        routes=[
            *steering,
            *tap_routes(inbox, page=page, headers=HEADERS),
            Route("/healthz", healthz),
            Route("/", authed(listing)),
            Route("/history", authed(past)),
            Route("/static/{name}", authed(asset)),
            Route("/r/{key}/{rid}", authed(one)),
            Route("/r/{key}/{rid}/answer", authed(reply), methods=["POST"]),
            Route("/r/{key}/{rid}/dismiss", authed(dismiss), methods=["POST"]),
        ]
    )


def _approves(card: pages.Card, text: str) -> bool:
    """Whether ``text`` would approve the request (a review's Approve needs "I checked it")."""
    try:
        decision, _ = parse_for(card.record, text)
    except LoopkitError:
        return False
    return decision.chosen_option == "approved"


def default_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "human"
