"""The web inbox in-process (the ASGI app through httpx's ASGI transport): auth, CSRF,
answers, pages.

The browser tests (``test_inbox_browser.py``) drive the same app in a real Chromium; these
cover every rule quickly and without one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from loopkit import config
from loopkit.answering import answer
from loopkit.escalation import gate
from loopkit.escalation.ask import Question
from loopkit.escalation.ask import ask as do_ask
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.home import Registry, home, workspace_id
from loopkit.inbox.auth import InboxToken, Throttle
from loopkit.inbox.web import Inbox, app
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from helpers import Browser


@pytest.fixture
def inbox(ws: Path) -> tuple[Browser, InboxToken]:
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "none"\n')
    Registry().register(ws, "shop")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    return Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs))), token


def escalate(ws: Path, question: str = "Which flow?") -> str:
    result = Escalator(config.load(ws)).escalate(
        Escalation(question, "checkout", ["read the spec"],
                   [parse_choice("Keep — as is"), parse_choice("Migrate — to v2")])
    )  # fmt: skip
    return result.request.request_id


def record(ws: Path, request_id: str) -> dict[str, object]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def login(client: Browser, token: InboxToken) -> None:
    client.get(f"/?token={token.value()}", follow_redirects=False)


def csrf_of(html: str) -> str:
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def url_of(ws: Path, request_id: str) -> str:
    return f"/r/{workspace_id(ws)}/{request_id}"


def test_everything_but_health_is_401_without_a_session(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, _ = inbox
    rid = escalate(ws)
    for path in ("/", "/history", "/static/inbox.css", "/static/inbox.js", url_of(ws, rid)):
        response = client.get(path)
        assert response.status_code == 401 and response.text == "401 Unauthorized\n", path
        assert "Which flow" not in response.text
    assert client.post(url_of(ws, rid) + "/answer", data={"reply": "A"}).status_code == 401
    assert client.get("/healthz").text == "ok\n"
    assert record(ws, rid)["status"] == "open"


def test_the_token_becomes_a_strict_httponly_cookie_and_leaves_the_url(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    response = client.get(f"/history?token={token.value()}&x=1", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/history?x=1"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert token.value() not in cookie
    assert client.get("/").status_code == 200


def test_wrong_tokens_are_401_then_rate_limited(inbox: tuple[Browser, InboxToken]) -> None:
    client, _ = inbox
    codes = [client.get("/?token=guess" + str(n)).status_code for n in range(7)]
    assert codes[:5] == [401] * 5 and codes[5:] == [429, 429]


def test_wrong_tokens_lock_out_their_presenter_never_the_token(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    """SPEC §28: a stranger's guesses from the human's address (every client of a loopback
    proxy has one) leave the human's own link working; the stranger stays locked out."""
    client, token = inbox
    for n in range(20):
        client.get(f"/?token=guess{n}")
    phone = Browser(client.transport.app)  # the same address, the right link
    assert phone.get(f"/?token={token.value()}", follow_redirects=False).status_code == 303
    assert phone.get("/").status_code == 200
    assert client.get("/?token=guess-again").status_code == 429


def test_rotating_the_token_signs_everyone_out(inbox: tuple[Browser, InboxToken]) -> None:
    client, token = inbox
    login(client, token)
    assert client.get("/").status_code == 200
    token.rotate()
    assert client.get("/").status_code == 401


def test_a_tap_answers_via_the_inbox_and_lifts_the_block(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    page = client.get("/").text
    assert "Which flow?" in page and "A) Keep" in page and "B) Migrate" in page
    done = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf_of(page), "reply": "B"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and done.headers["location"].endswith("?done=1")
    resolution = record(ws, rid)["resolution"]
    assert isinstance(resolution, dict)
    assert (resolution["via"], resolution["by"], resolution["chosen_option"]) == (
        "inbox",
        "ana",
        "migrate",
    )
    assert not (ws / "BLOCKED.md").exists()
    assert "No open questions" in client.get("/").text
    assert "Answered" in client.get(done.headers["location"]).text


def test_an_answer_the_fleet_could_not_take_says_it_may_not_stand(
    inbox: tuple[Browser, InboxToken], ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SPEC §28: an answer recorded here while the fleet's database cannot be reached says
    so on the inbox too, as `loopkit reply` (75) and the relays do."""
    from loopkit.requests.hub import LocalHub

    monkeypatch.setattr(LocalHub, "claim", lambda *_: False)  # the fleet did not take it
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    page = client.get("/").text
    done = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf_of(page), "reply": "B"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and done.headers["location"].endswith("?done=here")
    shown = client.get(done.headers["location"]).text
    assert "Answered" in shown and "the fleet is unreachable" in shown
    assert "stands only if nobody answered elsewhere" in shown


def test_a_stale_button_says_who_answered_never_an_error(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    page = client.get("/").text
    answer(RequestStore(Workspace.of(config.load(ws))), rid, "A", by="bo", via="telegram")
    late = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf_of(page), "reply": "B"})
    assert late.status_code == 200
    assert "Already answered by bo via telegram" in late.text
    resolution = record(ws, rid)["resolution"]
    assert isinstance(resolution, dict) and resolution["by"] == "bo"


def test_a_change_without_the_form_token_is_refused(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    for data in ({"reply": "A"}, {"reply": "A", "csrf": "0" * 32}):
        refused = client.post(url_of(ws, rid) + "/answer", data=data)
        assert refused.status_code == 403
    assert client.get(url_of(ws, rid) + "/answer").status_code == 405
    assert record(ws, rid)["status"] == "open"


def test_a_review_needs_i_checked_it_before_approve(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    asked = do_ask(config.load(ws), Question(
        situation="The release notes are drafted.", policy="reviews need a human",
        prompt="Approve the release notes?", kind="review", check_target="docs/RELEASE.md",
        criteria=("mentions the breaking change",), artifact_url="https://example.org/notes",
    ), store=RequestStore(Workspace.of(config.load(ws))))  # fmt: skip
    assert asked.record is not None
    rid = asked.record.request_id
    login(client, token)
    page = client.get(url_of(ws, rid)).text
    assert "docs/RELEASE.md" in page and "mentions the breaking change" in page
    assert 'href="https://example.org/notes"' in page and "I checked it" in page
    form = {"csrf": csrf_of(page), "reply": "A"}
    refused = client.post(url_of(ws, rid) + "/answer", data=form)
    assert refused.status_code == 400 and "Tick" in refused.text
    assert record(ws, rid)["status"] == "open"
    client.post(url_of(ws, rid) + "/answer", data={**form, "reply": "C"})  # Defer: still open
    assert record(ws, rid)["status"] == "deferred"
    client.post(url_of(ws, rid) + "/answer", data={**form, "checked": "1"})
    assert record(ws, rid)["status"] == "resolved"


def test_a_gate_shows_its_masked_command_and_folder(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    argv = ["psql", "postgres://app:hunter2@db/prod", "-c", "DROP TABLE users"]
    gate.gate(config.load(ws), argv, cwd=str(ws), store=RequestStore(Workspace.of(config.load(ws))))
    (path,) = (ws / "requests").glob("*.json")
    login(client, token)
    page = client.get(url_of(ws, path.stem)).text
    assert "postgres://app:***@db/prod" in page and "DROP TABLE users" in page
    assert str(ws) in page and "hunter2" not in page


def test_context_refs_inline_cut_at_200_lines_and_only_inside(
    inbox: tuple[Browser, InboxToken], ws: Path, tmp_path: Path
) -> None:
    client, token = inbox
    (ws / "notes.md").write_text("".join(f"line {n}\n" for n in range(1, 301)))
    (tmp_path / "secret.txt").write_text("outside the workspace\n")
    asked = do_ask(config.load(ws), Question(
        situation="Two designs.", policy="ask on ux", prompt="Which layout?",
        options=("Grid", "List"), category="ux", attach=("notes.md", "../secret.txt"),
    ), store=RequestStore(Workspace.of(config.load(ws))))  # fmt: skip
    assert asked.record is not None
    login(client, token)
    page = client.get(url_of(ws, asked.record.request_id)).text
    assert "line 200</pre>" in page and "line 201" not in page and "(first 200 lines)" in page
    assert "../secret.txt" in page and "outside the workspace" not in page


def test_history_lists_outcome_who_via_when(inbox: tuple[Browser, InboxToken], ws: Path) -> None:
    client, token = inbox
    rid = escalate(ws)
    answer(RequestStore(Workspace.of(config.load(ws))), rid, "A", by="bo", via="cli")
    login(client, token)
    page = client.get("/history").text
    assert "Which flow?" in page and "by bo via cli" in page and "Resolved" in page


def test_escapes_in_a_question_never_reach_the_page_as_markup(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    escalate(ws, question="<script>alert(1)</script>?")
    login(client, token)
    page = client.get("/").text
    assert "<script>alert" not in page and "&lt;script&gt;" in page


def test_unknown_requests_and_workspaces_are_404(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    assert client.get(f"/r/0000000000000000/{rid}").status_code == 404
    assert client.get(url_of(ws, "nope")).status_code == 404
    assert client.get(url_of(ws, "..%2F..%2Fetc")).status_code == 404


DROP = ["psql", "postgres://app:hunter2@db/prod", "-c", "DROP TABLE users"]
ASKED_TWICE = (
    "Approve `psql &#39;postgres://app:***@db/prod&#39; -c &#39;DROP TABLE users&#39;`? "
    "This cannot be undone."
)


def drop_table_gate(ws: Path) -> str:
    store = RequestStore(Workspace.of(config.load(ws)))
    return gate.gate(config.load(ws), DROP, cwd=str(ws), store=store).record.request_id


def test_approving_a_drop_table_gate_takes_two_posts(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = drop_table_gate(ws)
    login(client, token)
    csrf = csrf_of(client.get("/").text)  # the list's Approve button posts as the page's does
    for reply in ("A", "approve", "yes"):
        first = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf, "reply": reply})
        assert first.status_code == 200 and ASKED_TWICE in first.text, reply
        assert 'name="confirm" value="1"' in first.text and "hunter2" not in first.text
        assert record(ws, rid)["status"] == "open" and (ws / "BLOCKED.md").exists()
    second = client.post(url_of(ws, rid) + "/answer",
                         data={"csrf": csrf_of(first.text), "reply": "A", "confirm": "1"},
                         follow_redirects=False)  # fmt: skip
    assert second.status_code == 303
    after = record(ws, rid)
    resolution = after["resolution"]
    assert after["status"] == "resolved" and isinstance(resolution, dict)
    assert (resolution["outcome"], resolution["via"]) == ("approved", "inbox")
    assert not (ws / "BLOCKED.md").exists()


@pytest.mark.parametrize("reply", ["approve the rollback instead", "approve: false", "yes 0"])
def test_a_qualified_approval_of_a_drop_table_gate_approves_nothing(
    inbox: tuple[Browser, InboxToken], ws: Path, reply: str
) -> None:
    """SPEC §28: typed in the free-text box, it is feedback at once — never asked twice,
    never an approval — and the answer page says how to approve."""
    client, token = inbox
    rid = drop_table_gate(ws)
    login(client, token)
    page = client.get(url_of(ws, rid)).text
    done = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf_of(page), "reply": reply})
    assert done.status_code == 200 and ASKED_TWICE not in done.text
    assert "not approved: reply `approve` alone to approve" in done.text
    resolution = record(ws, rid)["resolution"]
    assert isinstance(resolution, dict) and resolution["outcome"] == "changes_requested"


def test_rejecting_a_drop_table_gate_is_one_post(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = drop_table_gate(ws)
    login(client, token)
    page = client.get(url_of(ws, rid)).text
    done = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf_of(page), "reply": "B"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303
    resolution = record(ws, rid)["resolution"]
    assert isinstance(resolution, dict) and resolution["outcome"] == "rejected"


def test_an_ordinary_approval_is_one_post(inbox: tuple[Browser, InboxToken], ws: Path) -> None:
    client, token = inbox
    asked = do_ask(config.load(ws), Question(
        situation="Rename a helper in utils.", policy="ask", prompt="Rename the helper?",
        kind="approval", confidence=0.3,
    ), store=RequestStore(Workspace.of(config.load(ws))))  # fmt: skip
    assert asked.record is not None
    rid = asked.record.request_id
    login(client, token)
    page = client.get(url_of(ws, rid)).text
    done = client.post(url_of(ws, rid) + "/answer", data={"csrf": csrf_of(page), "reply": "A"},
                       follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and record(ws, rid)["status"] == "resolved"


def test_dismiss_asks_once_more_then_closes_it_never_as_an_answer(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    page = client.get(url_of(ws, rid)).text
    assert f'action="{url_of(ws, rid)}/dismiss"' in page
    refused = client.post(url_of(ws, rid) + "/dismiss", data={"confirm": "1"})
    assert refused.status_code == 403 and record(ws, rid)["status"] == "open"
    first = client.post(url_of(ws, rid) + "/dismiss", data={"csrf": csrf_of(page)})
    assert first.status_code == 200 and "Dismiss this request?" in first.text
    assert 'name="confirm" value="1"' in first.text
    assert record(ws, rid)["status"] == "open" and (ws / "BLOCKED.md").exists()
    second = client.post(url_of(ws, rid) + "/dismiss",
                         data={"csrf": csrf_of(first.text), "confirm": "1", "reason": "stale"},
                         follow_redirects=False)  # fmt: skip
    assert second.status_code == 303 and second.headers["location"] == url_of(ws, rid)
    after = record(ws, rid)
    resolution = after["resolution"]
    assert after["status"] == "dismissed" and isinstance(resolution, dict)
    assert (resolution["by"], resolution["via"], resolution["reason"]) == ("ana", "inbox", "stale")
    assert resolution["chosen_option"] is None and not (ws / "BLOCKED.md").exists()
    assert "Dismissed" in client.get(url_of(ws, rid)).text
    again = client.post(url_of(ws, rid) + "/dismiss",
                        data={"csrf": csrf_of(first.text), "confirm": "1"})  # fmt: skip
    assert again.status_code == 200 and "Already dismissed by ana via inbox" in again.text
    assert "Dismissed" in client.get("/history").text


def test_a_ghost_says_it_can_be_dismissed(inbox: tuple[Browser, InboxToken], ws: Path) -> None:
    client, token = inbox
    rid = escalate(ws)
    login(client, token)
    assert "nobody will answer it" not in client.get("/").text
    (ws / "BLOCKED.md").unlink()  # by hand, with no supervisor to see it
    for page in (client.get("/").text, client.get(url_of(ws, rid)).text):
        assert "Its BLOCKED.md is gone: nobody will answer it." in page
        assert f"loopkit dismiss {rid}" in page


MIB = 1024 * 1024


def post_streamed(
    ws: Path, token: InboxToken, path: str, chunks: int, *, declared: int | None = None
) -> tuple[int | None, int]:
    """POST ``chunks`` MiB to ``path`` with a session, straight to the ASGI app as a server
    would hand it over (chunk by chunk): the status, and how many chunks the app pulled."""
    hubs = Hubs()
    served = Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)
    asgi = app(served)
    cookie = f"loopkit_session={served.sessions.new_session()}".encode()
    headers = [(b"cookie", cookie), (b"content-type", b"application/x-www-form-urlencoded")]
    if declared is not None:
        headers.append((b"content-length", str(declared).encode()))
    scope = {"type": "http", "http_version": "1.1", "method": "POST", "path": path,
             "raw_path": path.encode(), "query_string": b"", "headers": headers,
             "client": ("203.0.113.9", 50000), "server": ("127.0.0.1", 8765), "scheme": "http",
             "root_path": ""}  # fmt: skip
    pulled, status = 0, None

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        pulled += 1
        if pulled > chunks:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": b"x" * MIB, "more_body": pulled < chunks}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    asyncio.run(asgi(scope, receive, send))
    return status, pulled


def test_a_body_over_the_cap_is_refused_while_it_is_read(
    inbox: tuple[Browser, InboxToken], ws: Path
) -> None:
    """SPEC §28: 413 once a form passes 64 KiB — never read whole first (64 MiB sent)."""
    _, token = inbox
    rid = escalate(ws)
    status, pulled = post_streamed(ws, token, url_of(ws, rid) + "/answer", 64)
    assert (status, pulled) == (413, 1)
    status, pulled = post_streamed(ws, token, url_of(ws, rid) + "/answer", 64, declared=64 * MIB)
    assert (status, pulled) == (413, 0)
    status, pulled = post_streamed(ws, token, "/loops/some-loop/pause", 64)
    assert (status, pulled) == (413, 1)
    assert record(ws, rid)["status"] == "open"
