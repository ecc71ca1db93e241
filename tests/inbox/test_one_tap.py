"""A push's one-tap answers in the web inbox (SPEC §29), in process: the pushes go to the fake
ntfy server on 127.0.0.1, the taps come through the ASGI app — no cookie, the URL's
signature is the permission: 403 when it does not verify, 409 when used or answered, 410
when expired; two taps for what cannot be undone; only listed people."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from loopkit import config
from loopkit.escalation import gate
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.home import Registry, home, taps, workspace_id
from loopkit.inbox.auth import InboxToken, Throttle
from loopkit.inbox.web import Inbox, app
from loopkit.requests.locate import Stores
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

from fakentfy import FakeNtfy, Published
from fakepagerduty import TEST_KEY, FakePagerDuty
from helpers import Browser, wait_until

BASE = "http://127.0.0.1"  # the inbox as the phone reaches it (the test client's base URL)


@pytest.fixture
def team(ws: Path, ntfy: FakeNtfy, monkeypatch: pytest.MonkeyPatch) -> Browser:
    """Ana and Ben on ntfy, both asked at once; the inbox at BASE."""
    monkeypatch.setenv("LOOPKIT_INBOX_URL", BASE)
    people = "".join(
        f'[[escalation.people]]\nname = "{name}"\nchannel = "ntfy"\n'
        f'address = "{ntfy.topic_url(name.lower())}"\nafter = "0m"\n'
        for name in ("Ana", "Ben")
    )
    (ws / "loopkit.toml").write_text(people)
    Registry().register(ws, "shop")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    return Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)))


def escalate(ws: Path) -> str:
    result = Escalator(config.load(ws)).escalate(
        Escalation("Which flow?", "checkout", ["read the spec"],
                   [parse_choice("Keep — as is"), parse_choice("Migrate — to v2")])
    )  # fmt: skip
    return result.request.request_id


def button(published: Published, index: int) -> str:
    """The path and query of a push's button: what the phone posts to the inbox."""
    parts = urlsplit(published.actions[index]["url"])
    assert f"{parts.scheme}://{parts.netloc}" == BASE
    return f"{parts.path}?{parts.query}"


def record(ws: Path, request_id: str) -> dict[str, object]:
    data = json.loads((ws / "requests" / f"{request_id}.json").read_text())
    assert isinstance(data, dict)
    return data


def test_a_tap_answers_as_the_person_it_was_sent_to_once(
    team: Browser, ws: Path, ntfy: FakeNtfy
) -> None:
    rid = escalate(ws)
    [to_ana], [to_ben] = ntfy.wait_for("ana"), ntfy.wait_for("ben")
    assert [a["action"] for a in to_ana.actions] == ["http", "http", "view"]
    answered = team.post(button(to_ana, 1))
    assert answered.status_code == 200 and "recorded: → B) Migrate (letter B)" in answered.text
    resolution = record(ws, rid)["resolution"]
    assert isinstance(resolution, dict)
    assert (resolution["by"], resolution["via"], resolution["chosen_option"]) == (
        "Ana", "ntfy", "migrate"
    )  # fmt: skip
    assert not (ws / "BLOCKED.md").exists()
    # Ana: her reading; Ben: who answered. Each once.
    assert "recorded: → B) Migrate" in ntfy.wait_for("ana", 2)[1].message["message"]
    assert (
        ntfy.wait_for("ben", 2)[1].message["message"].endswith("answered by Ana via ntfy: Migrate")
    )
    again = team.post(button(to_ana, 1))
    assert again.status_code == 409 and "already resolved by Ana via ntfy" in again.text
    late = team.post(button(to_ben, 0))
    assert late.status_code == 409
    told = ntfy.wait_for("ben", 3)[2].message["message"]
    assert "already answered — answered by Ana via ntfy: Migrate" in told
    assert len(ntfy.messages("ana")) == 2  # her own answer, tapped again: no news to her
    assert record(ws, rid)["resolution"] == resolution


def test_your_own_tap_again_tells_you_nothing_when_nobody_is_listed(
    ws: Path, ntfy: FakeNtfy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no [[escalation.people]] a tap answers as the inbox's user; the same button
    tapped again is a 409 and no "already answered" push to the one who answered."""
    monkeypatch.setenv("LOOPKIT_INBOX_URL", BASE)
    monkeypatch.setenv("LOOPKIT_HITL_NTFY_URL", ntfy.topic_url("loop"))
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "ntfy"\n')
    Registry().register(ws, "shop")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    inbox = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)))
    rid = escalate(ws)
    [pushed] = ntfy.wait_for("loop")
    assert inbox.post(button(pushed, 0)).status_code == 200
    ntfy.wait_for("loop", 2)  # her reading, pushed back
    again = inbox.post(button(pushed, 0))
    assert again.status_code == 409 and "already resolved by ana via ntfy" in again.text
    escalate(ws)  # the next question: pushed after whatever the tap again would have pushed
    said = [m.message["message"] for m in ntfy.wait_for("loop", 3)]
    assert "Which flow?" in said[2] and not any("already answered" in m for m in said), said
    assert record(ws, rid)["status"] == "resolved"


def test_a_url_changed_in_any_part_is_403(team: Browser, ws: Path, ntfy: FakeNtfy) -> None:
    rid = escalate(ws)
    path = button(ntfy.wait_for("ana")[0], 0)
    forged = [
        path.replace("/0?", "/1?"),  # the other choice, under A's signature
        path.replace("p=Ana", "p=Ben"),  # another person
        path[:-1] + ("0" if path[-1] != "0" else "1"),  # the signature itself
        path.replace(f"/{rid}/", "/20261202-000000-beef/"),
        path.split("&s=")[0],  # none
    ]
    for url in forged:
        refused = team.post(url)
        assert refused.status_code == 403, url
        assert "not valid" in refused.text and rid not in refused.text
    assert record(ws, rid)["status"] == "open"


def test_too_many_bad_signatures_are_throttled(team: Browser, ws: Path, ntfy: FakeNtfy) -> None:
    escalate(ws)
    path = button(ntfy.wait_for("ana")[0], 0)
    codes = [team.post(path[:-2] + f"{n:02d}").status_code for n in range(12)]
    assert codes[0] == 403 and codes[-1] == 429


def test_a_tap_expires_with_its_question(team: Browser, ws: Path, ntfy: FakeNtfy) -> None:
    rid = escalate(ws)
    key = InboxToken(home()).value()
    old = taps.Tap(workspace_id(ws), rid, 0, "Ana", 1_000)
    parts = urlsplit(taps.url(BASE, key, old))
    gone = team.post(f"{parts.path}?{parts.query}")
    assert gone.status_code == 410 and record(ws, rid)["status"] == "open"
    store = RequestStore(Workspace.of(config.load(ws)))

    def expire(current: object) -> None:
        current.status = "expired"  # type: ignore[attr-defined]

    store.update(rid, expire)
    assert team.post(button(ntfy.wait_for("ana")[0], 0)).status_code == 410


def test_only_listed_people_answer_even_with_a_valid_signature(
    team: Browser, ws: Path, ntfy: FakeNtfy
) -> None:
    rid = escalate(ws)
    key = InboxToken(home()).value()
    cleo = taps.Tap(workspace_id(ws), rid, 0, "Cleo", 2_000_000_000)
    parts = urlsplit(taps.url(BASE, key, cleo))
    refused = team.post(f"{parts.path}?{parts.query}")
    assert refused.status_code == 403 and "Cleo is not among the people" in refused.text
    assert record(ws, rid)["status"] == "open"


def test_approving_a_gate_from_a_push_takes_two_taps(
    team: Browser, ws: Path, ntfy: FakeNtfy
) -> None:
    store = RequestStore(Workspace.of(config.load(ws)))
    drop = ["psql", "postgres://app:hunter2@db/prod", "-c", "DROP TABLE users"]
    rid = gate.gate(config.load(ws), drop, cwd=str(ws), store=store).record.request_id
    [push] = ntfy.wait_for("ana")
    assert push.message["priority"] == 5
    approve, reject = push.actions[0], push.actions[1]
    assert (approve["action"], reject["action"]) == ("view", "http")  # the confirm page
    page = team.get(button(push, 0))
    assert page.status_code == 200 and "This cannot be undone." in page.text
    assert 'name="confirm" value="1"' in page.text and "hunter2" not in page.text
    unconfirmed = team.post(button(push, 0))  # as an http action would: nothing recorded
    assert unconfirmed.status_code == 409 and record(ws, rid)["status"] == "open"
    approved = team.post(button(push, 0), data={"confirm": "1"})
    assert approved.status_code == 200 and "approved" in approved.text
    resolution = record(ws, rid)["resolution"]
    assert isinstance(resolution, dict) and resolution["outcome"] == "approved"


def test_opening_a_paged_request_acknowledges_its_incident(
    ws: Path, pagerduty: FakePagerDuty, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPKIT_HITL_PAGERDUTY_ROUTING_KEY", TEST_KEY)
    monkeypatch.setenv("LOOPKIT_HITL_PAGERDUTY_API", pagerduty.url)
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "pagerduty"\n')
    Registry().register(ws, "shop")
    token = InboxToken(home())
    token.ensure()
    hubs = Hubs()
    client = Browser(app(Inbox(token, "ana", Throttle(), Stores(hubs.for_config), hubs)))
    rid = escalate(ws)
    pagerduty.wait_for(rid, "triggered")
    client.get(f"/?token={token.value()}")
    page = client.get(f"/r/{workspace_id(ws)}/{rid}")
    assert page.status_code == 200
    pagerduty.wait_for(rid, "acknowledged")
    client.get(f"/r/{workspace_id(ws)}/{rid}")  # opened again: acknowledged once
    csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    client.post(f"/r/{workspace_id(ws)}/{rid}/answer", data={"csrf": csrf, "reply": "A"})
    alert = pagerduty.wait_for(rid, "resolved")
    assert alert.actions == ["trigger", "acknowledge", "resolve"]
    wait_until(lambda: any(e.get("followup") == "outcome" and e.get("ok")
                           for e in record(ws, rid)["delivery"]), what="the resolve recorded")  # type: ignore[union-attr]  # fmt: skip
