"""The inbox's Loops page (SPEC section 22): every loop of the machine — and with a fleet,
every machine's — live like the list, with Pause / Resume / Stop buttons and a note box.

``GET /loops`` (``?fragment=list``: the part the page's script fetches every second),
``POST /loops/<key>/pause|resume|stop``, ``POST /loops/<key>/say`` (a message: into the
agent's running turn where it takes one, else a note for its next run — the page says
which, SPEC §24) and ``POST /loops/<key>/note`` (a note), each with the session's CSRF
token. Each card shows the agent's running turn: the call it runs and since when, its last
words. Stop takes two taps: the first POST shows a page that asks again and
changes nothing; its form posts once more with ``confirm=1``. A loop is addressed by its
registry id (another machine's by the key made of its machine and workspace), never by a
path from the request. Every command is recorded with who (``--user``), via ``inbox`` and
when, as the CLI's are (:mod:`loopkit.loops`); another machine's loop gets it through the
fleet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request as HttpRequest
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from loopkit import loops
from loopkit.errors import LoopkitError
from loopkit.inbox.guard import body_within

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.loops import Loop
    from loopkit.workspace.steer import Command

MAX_FORM = 16 * 1024
Handler = Callable[[HttpRequest, str], Awaitable[Response]]
Page = Callable[..., Response]


def _card(loop: Loop) -> dict[str, Any]:
    """What a loop's card shows, and which buttons it offers."""
    return {
        "loop": loop,
        "since": loops.since_text(loop),
        "verify": loops.verify_text(loop),
        "spend": f"${loop.spend_usd:.2f}" if loop.spend_usd is not None else None,
        "question_url": f"/r/{loop.key}/{loop.request_id}" if loop.request_id else None,
        "can_pause": loop.paused_by is None and loop.state != "finished",
        "can_resume": loop.paused_by is not None,
        "can_stop": loop.pid is not None,
        "live": loops.live_line(loop.live) if loop.live else None,
        "said": loops.said_line(loop.live, 200) if loop.live else None,
        "takes_messages": bool(loop.live and loop.live.get("takes_messages")),
    }


def routes(
    *,
    page: Page,
    authed: Callable[[Handler], Callable[[HttpRequest], Awaitable[Response]]],
    csrf: Callable[[str], str],
    csrf_matches: Callable[[str, str], bool],
    user: str,
    headers: dict[str, str],
    remote: loops.Fleet,
) -> list[Route]:
    """The Loops page's routes; ``remote``: the fleets (other machines' loops are listed and
    steered through them)."""

    def find(key: str) -> Loop | None:
        return next((one for one in loops.all_loops(remote) if one.key == key), None)

    async def listing(request: HttpRequest, nonce: str) -> Response:
        cards = [_card(one) for one in loops.all_loops(remote)]
        name = "_loops.html.j2" if request.query_params.get("fragment") else "loops.html.j2"
        told = request.query_params.get("told")
        return page(name, cards=cards, csrf=csrf(nonce), title="Loops", told=told)

    async def form_of(request: HttpRequest, nonce: str) -> dict[str, str] | Response:
        body = await body_within(request, MAX_FORM)
        if body is None:
            too_large = f"413 Content Too Large: a form is at most {MAX_FORM // 1024} KiB\n"
            return PlainTextResponse(too_large, 413, headers={**headers, "Connection": "close"})
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if not csrf_matches(nonce, form.get("csrf", "")):
            stale = "403 Forbidden: stale or missing form token; reload the page\n"
            return PlainTextResponse(stale, 403, headers=headers)
        return form

    def back(told: str) -> Response:
        from urllib.parse import urlencode

        return RedirectResponse(f"/loops?{urlencode({'told': told})}", 303, headers=headers)

    def command_route(command: Command) -> Handler:
        async def handle(request: HttpRequest, nonce: str) -> Response:
            form = await form_of(request, nonce)
            if isinstance(form, Response):
                return form
            loop = find(request.path_params["key"])
            if loop is None:
                return page("missing.html.j2", 404, title="Not found")
            if command == "stop" and form.get("confirm") != "1":
                # Two taps (as a dismissal): this one changes nothing.
                return page("loop_confirm.html.j2", card=_card(loop), csrf=csrf(nonce),
                            title=loop.repo)  # fmt: skip
            try:
                told = loops.steer(loop, command, by=user, via="inbox", fleet=remote)
            except LoopkitError as exc:
                return page("refused.html.j2", 400, title="Not done", message=str(exc))
            return back(told)

        return handle

    def words_route(field: str, now: bool) -> Handler:
        async def handle(request: HttpRequest, nonce: str) -> Response:
            form = await form_of(request, nonce)
            if isinstance(form, Response):
                return form
            loop = find(request.path_params["key"])
            if loop is None:
                return page("missing.html.j2", 404, title="Not found")
            text = (form.get(field) or "").strip()
            if not text:
                return back(f"{loop.where}: an empty {'message' if now else 'note'}; "
                            "nothing sent")  # fmt: skip
            give = loops.say if now else loops.note
            try:
                # A message waits a moment for the supervisor to say where it went: off
                # the event loop.
                told = await run_in_threadpool(give, loop, text, by=user, via="inbox",
                                               fleet=remote)  # fmt: skip
            except LoopkitError as exc:
                return page("refused.html.j2", 400, title="Not done", message=str(exc))
            return back(told)

        return handle

    return [
        Route("/loops", authed(listing)),
        *[
            Route(f"/loops/{{key}}/{command}", authed(command_route(command)), methods=["POST"])
            for command in ("pause", "resume", "stop")
        ],
        Route("/loops/{key}/say", authed(words_route("text", now=True)), methods=["POST"]),
        Route("/loops/{key}/note", authed(words_route("note", now=False)), methods=["POST"]),
    ]
