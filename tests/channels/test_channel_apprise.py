"""Channel ``apprise`` through Apprise's generic ``json://`` scheme to a real HTTP server on
127.0.0.1 (tests/fakeserver.py); and the inbox link that ends every one-way message."""

from __future__ import annotations

from pathlib import Path

from loopkit import channels
from loopkit import config as config_mod
from loopkit.channels.apprise import AppriseChannel
from loopkit.channels.slack import SlackChannel
from loopkit.config import ChannelSettings
from loopkit.escalation.blockfile import Escalation, parse_choice
from loopkit.escalation.escalator import Escalator
from loopkit.message import Message

from fakeserver import FakeServer, Reply

LINK = "http://laptop.vpn:8765/r/abc/r-20261202-0001"


def message(link: str | None = LINK) -> Message:
    return Message(
        request_id="r-20261202-0001",
        repo="shop",
        at="2026-12-02T13:11:06Z",
        question="Which payment flow?",
        context="Feature: checkout",
        attempted=("read PROMPT.md",),
        choices=("Flow A", "Flow B"),
        link=link,
    )


def json_url(server: FakeServer, path: str = "/notify") -> str:
    return server.url.replace("http://", "json://") + path


def test_apprise_delivers_the_five_lines_and_the_link(server: FakeServer) -> None:
    channel = channels.create("apprise", ChannelSettings(apprise_urls=(json_url(server),)))
    assert channel.problems() == []
    outcome = channel.send(message())
    assert outcome.ok is True
    [seen] = server.calls("/notify")
    assert seen.body["title"] == "[loopkit] blocked in shop on 2026-12-02T13:11:06Z"
    lines = seen.body["message"].splitlines()
    assert lines[0] == "Q: Which payment flow?" and lines[3] == "Choices: A) Flow A | B) Flow B"
    assert lines[-1] == f"Answer: {LINK}"  # one tap opens the answer page


def test_apprise_failures_count_like_any_channels(ws: Path, server: FakeServer) -> None:
    server.queue("/notify", Reply(500, "boom"), Reply(500, "boom"))
    secret = json_url(server, "/notify?token=SeCrEt123")
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = ["apprise", "dial"]\n')
    env = {"LOOPKIT_HITL_APPRISE_URLS": secret, "LOOPKIT_HITL_DIAL_CMD": "true"}
    config = config_mod.load(ws, env)
    escalation = Escalation(question="Which flow?", context="checkout", attempted=[],
                            choices=[parse_choice("Flow A")])  # fmt: skip
    record = Escalator(config).escalate(escalation).request
    first = record.delivery[0]
    assert first.channel == "apprise" and first.ok is False and not first.hard
    assert first.error and "SeCrEt123" not in first.error and "\n" not in first.error
    assert first.error.startswith("apprise: ")
    # A soft failure is retried later on the same rung (SPEC §9), not handed on at once.
    assert [d.channel for d in record.delivery] == ["apprise"]


def test_an_unknown_apprise_url_fails_hard_without_showing_it() -> None:
    channel = AppriseChannel(ChannelSettings(apprise_urls=("nosuchscheme://k3y@host",)))
    outcome = channel.send(message())
    assert outcome.ok is False and outcome.hard
    assert outcome.error == (
        "URL #1 of LOOPKIT_HITL_APPRISE_URLS is not one Apprise can parse: check its scheme and "
        "its parts against the Apprise wiki (https://github.com/caronc/apprise/wiki)"
    )
    assert channel.problems() == [outcome.error]  # doctor and `run` say it before a send
    assert (
        AppriseChannel(ChannelSettings())
        .problems()[0]
        .startswith("LOOPKIT_HITL_APPRISE_URLS is not set")
    )


def test_a_slack_webhook_message_ends_with_the_link(server: FakeServer) -> None:
    channel = SlackChannel(ChannelSettings(slack_webhook=server.url + "/hook"))
    assert channel.send(message()).ok
    [seen] = server.calls("/hook")
    assert seen.body["text"].splitlines()[-1] == f"Answer: {LINK}"
    assert len(seen.body["text"].splitlines()) == 6
    assert channel.send(message(link=None)).ok  # no inbox URL: the five lines alone
    assert len(server.calls("/hook")[-1].body["text"].splitlines()) == 5


def test_a_dial_gets_the_link_on_its_last_line(ws: Path) -> None:
    out = ws / "dialled.txt"
    channel = channels.create("dial", ChannelSettings(dial_cmd=f"sh -c 'cat > {out}'"))
    assert channel.send(message()).ok
    assert out.read_text().splitlines()[-1] == f"Answer: {LINK}"
