"""Channel ``ntfy`` against the fake ntfy server (tests/fakentfy.py): the five lines as title
and message, one button per choice to a one-tap URL, ``view`` only where a place is left,
priority from P0, the request's page as ``click`` — never the inbox token."""

from __future__ import annotations

from loopkit.config import ChannelSettings
from loopkit.message import Button, FollowUp, Message, Reminder

from fakentfy import FakeNtfy

INBOX = "http://laptop.vpn:8765"
TOKEN = "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2"


def settings(ntfy: FakeNtfy, topic: str = "ben-topic", **more: object) -> ChannelSettings:
    values = {"ntfy_url": ntfy.topic_url(topic), "inbox_url": INBOX, **more}
    return ChannelSettings(**values)  # type: ignore[arg-type]


def block(choices: int = 2, **more: object) -> Message:
    labels = ("Retry with a hint", "Skip the task", "Abort the loop")[:choices]
    buttons = tuple(Button(label, f"{INBOX}/t/ws/r1/{i}?p=Ben&e=9&s=x") for i, label in
                    enumerate(labels))  # fmt: skip
    values: dict[str, object] = {
        "request_id": "r1", "repo": "shop", "at": "2026-12-02T13:11:06Z",
        "question": "Verify failed 3 times on prices", "context": "pytest -q",
        "attempted": ("three fixes",), "choices": labels, "link": f"{INBOX}/r/ws/r1",
        "buttons": buttons, **more,
    }  # fmt: skip
    return Message(**values)  # type: ignore[arg-type]


def send(ntfy: FakeNtfy, message: object, **more: object) -> dict[str, object]:
    from loopkit.channels.ntfy import NtfyChannel

    outcome = NtfyChannel(settings(ntfy, **more), budget=5).send(message)  # type: ignore[arg-type]
    assert outcome.ok, outcome.error
    [published] = ntfy.messages("ben-topic")
    assert outcome.message_id == published.message["id"]
    return published.message


def test_the_five_lines_go_as_title_and_message_with_a_button_per_choice(ntfy: FakeNtfy) -> None:
    message = send(ntfy, block(2))
    assert message["title"] == "[loopkit] blocked in shop on 2026-12-02T13:11:06Z"
    lines = str(message["message"]).split("\n")
    assert [line.split(":")[0] for line in lines] == ["Q", "Context", "Attempted", "Choices"]
    actions = message["actions"]
    assert isinstance(actions, list)
    assert [(a["action"], a["label"], a.get("method")) for a in actions] == [
        ("http", "A) Retry with a hint", "POST"),
        ("http", "B) Skip the task", "POST"),
        ("view", "Open", None),  # a place was left: the request's page
    ]
    assert message["click"] == f"{INBOX}/r/ws/r1"
    assert message["priority"] == 3


def test_three_choices_leave_no_place_for_the_view_action(ntfy: FakeNtfy) -> None:
    actions = send(ntfy, block(3))["actions"]
    assert isinstance(actions, list) and len(actions) == 3
    assert all(a["action"] == "http" for a in actions)


def test_p0_is_priority_4_a_gate_5_and_two_tap_choices_open_the_confirm_page(
    ntfy: FakeNtfy,
) -> None:
    assert send(ntfy, block(2, p0=True))["priority"] == 4
    ntfy.published.clear()
    confirm = (Button("Approve", f"{INBOX}/t/ws/r1/0?s=x", confirm=True),
               Button("Reject", f"{INBOX}/t/ws/r1/1?s=y"))  # fmt: skip
    message = send(ntfy, block(2, p0=True, gate=True, buttons=confirm))
    assert message["priority"] == 5
    actions = message["actions"]
    assert isinstance(actions, list)
    assert [(a["action"], a["label"]) for a in actions[:2]] == [
        ("view", "A) Approve"),  # the second tap is on that page
        ("http", "B) Reject"),
    ]


def test_the_inbox_token_never_rides_on_a_push(ntfy: FakeNtfy) -> None:
    message = send(ntfy, block(2))
    assert "token" not in str(message)


def test_a_protected_topic_takes_the_access_token(ntfy: FakeNtfy) -> None:
    from loopkit.channels.ntfy import NtfyChannel

    ntfy.tokens["ben-topic"] = TOKEN
    refused = NtfyChannel(settings(ntfy), budget=5).send(block())
    assert refused.ok is False and refused.status == 403 and "forbidden" in str(refused.error)
    wrong = NtfyChannel(settings(ntfy, ntfy_token="tk_wrong"), budget=5).send(block())
    assert wrong.status == 401
    assert "tk_wrong" not in str(wrong.error)
    assert send(ntfy, block(), ntfy_token=TOKEN)["title"]
    assert ntfy.messages("ben-topic")[0].headers["Authorization"] == f"Bearer {TOKEN}"


def test_a_server_error_is_retried_once_and_a_bad_request_is_hard(ntfy: FakeNtfy) -> None:
    from loopkit.channels.ntfy import NtfyChannel

    ntfy.failures.append((503, {"Retry-After": "0"}))
    outcome = NtfyChannel(settings(ntfy), budget=5).send(block())
    assert outcome.ok and [e.status for e in outcome.earlier] == [503]
    bad = NtfyChannel(settings(ntfy, ntfy_url=f"{ntfy.url}/no.dots.allowed"), budget=5)
    refused = bad.send(block())
    assert refused.ok is False and refused.status == 400 and "topic invalid" in str(refused.error)


def test_without_the_inbox_address_no_block_is_sent(ntfy: FakeNtfy) -> None:
    from loopkit.channels.ntfy import NtfyChannel

    channel = NtfyChannel(settings(ntfy, inbox_url=None), budget=5)
    assert any("LOOPKIT_INBOX_URL" in p for p in channel.problems())
    outcome = channel.send(block())
    assert outcome.ok is False and outcome.hard and ntfy.messages("ben-topic") == []


def test_a_reminder_and_a_follow_up_are_plain_pushes(ntfy: FakeNtfy) -> None:
    reminder = Reminder("r1", "shop", "Which flow?", 7200.0, link=f"{INBOX}/r/ws/r1")
    message = send(ntfy, reminder)
    assert message["title"] == "[loopkit] shop"
    assert message["message"] == "[loopkit] still blocked in shop for 2h: Which flow?"
    assert message["actions"] == [
        {"id": message["actions"][0]["id"], "action": "view", "label": "Open",  # type: ignore[index]
         "url": f"{INBOX}/r/ws/r1", "clear": False}
    ]  # fmt: skip
    ntfy.published.clear()
    told = send(ntfy, FollowUp("r1", "shop", "answered by Ana via telegram: Skip the task"))
    assert told["message"] == "[loopkit] shop: answered by Ana via telegram: Skip the task"
    assert "actions" not in told
