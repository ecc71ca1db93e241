"""SPEC §16 in the web inbox: the page an answer lands on says how it was read."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from loopkit import config
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.home import Registry, home, workspace_id
from loopkit.inbox.auth import InboxToken, Throttle
from loopkit.inbox.web import Inbox, app
from loopkit.requests.locate import Stores
from loopkit.supervisor import triggers

from helpers import Browser


@pytest.fixture
def client(ws: Path) -> Browser:
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "none"\n')
    Registry().register(ws, "shop")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    browser = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)))
    browser.get(f"/?token={token.value()}", follow_redirects=False)
    return browser


@pytest.mark.parametrize(
    ("field", "reply", "told"),
    [
        ("reply", "B", "Answered: B) Skip the task (letter B) (via inbox)."),
        ("free", "stop, I'll fix it by hand",
         'Answered: C) Abort the loop ("stop": another word for it); '
         'note: "I\'ll fix it by hand" (via inbox).'),
        ("free", "skip?",
         "Answered: no option matched: kept as free text; the agent gets it as a hint with "
         "Retry (via inbox)."),
    ],
)  # fmt: skip
def test_an_answer_is_told_back_as_it_was_read(
    client: Browser, ws: Path, field: str, reply: str, told: str
) -> None:
    asked = triggers.verify_failures(task="round prices", failures=3, command="pytest",
                                     last_output="FAILED", failed=[], iteration=3)  # fmt: skip
    request_id = Escalator(config.load(ws)).escalate(asked).request.request_id
    url = f"/r/{workspace_id(ws)}/{request_id}"
    page = client.get(url).text
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    done = client.post(url + "/answer", data={"csrf": csrf, field: reply}, follow_redirects=False)
    assert done.status_code == 303
    answered = html.unescape(client.get(done.headers["location"]).text)
    assert told in answered
