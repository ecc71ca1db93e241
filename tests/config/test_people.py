"""``[[escalation.people]]`` in ``loopkit.toml`` (SPEC §29): read, checked, and every
mistake a config error naming the person and the fix — never a crash, never a guess."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit import config
from loopkit.config.people import Quiet, people
from loopkit.errors import ConfigError

TEAM = """
[[escalation.people]]
name = "Ana"
channel = "ntfy"
address = "https://ntfy.sh/ana-7Hq2"
after = "0m"
quiet = "22:00-07:00"
tz = "Europe/Berlin"

[[escalation.people]]
name = "Ben"
channel = "telegram"
address = "123456789"
after = "20m"

[[escalation.people]]
name = "On call"
channel = "pagerduty"
after = "1h"
"""


def load(ws: Path, text: str, **env: str) -> config.Config:
    (ws / "loopkit.toml").write_text(text)
    return config.load(ws, env)


def test_a_team_is_read_in_order_and_its_topics_are_secrets(ws: Path) -> None:
    loaded = load(ws, TEAM)
    team = loaded.escalation.people
    assert [(p.name, p.channel, p.after) for p in team] == [
        ("Ana", "ntfy", 0.0), ("Ben", "telegram", 1200.0), ("On call", "pagerduty", 3600.0)
    ]  # fmt: skip
    assert team[0].quiet == Quiet(22 * 60, 7 * 60, "Europe/Berlin")
    assert loaded.escalation.channels == ("ntfy", "telegram", "pagerduty")
    assert loaded.escalation.channel == "ntfy"  # with people, [escalation] channel is not needed
    assert "https://ntfy.sh/ana-7Hq2" in loaded.channels.secrets()
    assert "123456789" not in loaded.channels.secrets()  # a chat id is no secret


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ('name = "Ana"\nchannel = "fax"\nafter = "0m"', "channel: expected one of"),
        ('name = "Ana"\nchannel = "ntfy"\nafter = "0m"', "needs one: an ntfy topic URL"),
        ('name = "Ana"\nchannel = "ntfy"\naddress = "https://ntfy.sh/a b"\n', "spaces"),
        ('name = "Ana"\nchannel = "ntfy"\naddress = "ntfy.sh/ana"\n', "an ntfy topic URL"),
        ('name = "Ana"\nchannel = "telegram"\naddress = "ana"\n', "a chat id"),
        ('name = "Ana"\nchannel = "dial"\naddress = "+4915"\n', "takes none"),
        ('name = "Ana"\nchannel = "dial"\nafter = "soon"\n', "not a duration"),
        ('name = "Ana"\nchannel = "dial"\nquiet = "22-07"\n', 'such as "22:00-07:00"'),
        ('name = "Ana"\nchannel = "dial"\nquiet = "22:00-22:00"\n', "same time"),
        ('name = "Ana"\nchannel = "dial"\ntz = "Mars/Olympus"\n', "time zone"),
        ('name = "Ana"\nchannel = "dial"\ntz = "UTC"\n', "only with quiet hours"),
        ('name = "Ana"\nchannel = "dial"\nemail = "a@b"\n', "unknown key 'email'"),
        ('name = ""\nchannel = "dial"\n', "name:"),
    ],
)
def test_a_mistake_names_the_person_and_the_fix(ws: Path, entry: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(ws, f"[[escalation.people]]\n{entry}\n")
    text = str(caught.value)
    assert said in text and "person 1" in text and "loopkit.toml:1" in text


def test_names_are_unique_and_after_never_goes_down_the_list(ws: Path) -> None:
    twice = '[[escalation.people]]\nname = "Ana"\nchannel = "dial"\n' * 2
    with pytest.raises(ConfigError, match="two people are called 'Ana'"):
        load(ws, twice)
    person = '[[escalation.people]]\nname = "{}"\nchannel = "dial"\nafter = "{}"\n'
    backwards = person.format("Ana", "20m") + person.format("Ben", "5m")
    with pytest.raises(ConfigError, match=r"Ben \(after 5m\) is listed after Ana \(after 20m\)"):
        load(ws, backwards)


def test_a_broken_person_is_dropped_leniently_never_the_block(ws: Path) -> None:
    (ws / "loopkit.toml").write_text('[[escalation.people]]\nname = "Ana"\nchannel = "fax"\n')
    assert config.load(ws, {}, lenient=True).escalation.people == ()


def test_quiet_hours_wrap_midnight_in_their_zone() -> None:
    quiet = Quiet(22 * 60, 7 * 60, "Europe/Berlin")  # UTC+1 in December
    night = datetime(2026, 12, 2, 22, 30, tzinfo=UTC)  # 23:30 in Berlin
    assert quiet.holds(night)
    assert quiet.ends(night) == datetime(2026, 12, 3, 6, 0, tzinfo=UTC)  # 07:00 in Berlin
    day = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    assert not quiet.holds(day) and quiet.ends(day) == day
    assert not quiet.holds(datetime(2026, 12, 3, 6, 0, tzinfo=UTC))  # 07:00 itself: awake
    lunch = Quiet(12 * 60, 13 * 60, "UTC")  # a span within one day
    assert lunch.holds(datetime(2026, 12, 2, 12, 59, tzinfo=UTC))
    assert not lunch.holds(datetime(2026, 12, 2, 13, 0, tzinfo=UTC))


HOURS = st.integers(0, 23)
MINUTES = st.integers(0, 59)


@settings(max_examples=200, deadline=None)
@given(HOURS, MINUTES, HOURS, MINUTES, st.sampled_from(["", " ", "x", "24", ":", "-", "–"]),
       st.integers(0, 11))  # fmt: skip
def test_quiet_hours_near_misses_are_refused_or_read_exactly(
    h1: int, m1: int, h2: int, m2: int, junk: str, where: int
) -> None:
    """A well-formed span reads as written; the same with a character slipped in, a dash
    of another kind or an hour past 23 is refused — never read as something else."""
    good = f"{h1:02d}:{m1:02d}-{h2:02d}:{m2:02d}"
    entry = {"name": "Ana", "channel": "dial", "quiet": good}
    if (h1, m1) == (h2, m2):
        with pytest.raises(ValueError, match="same time"):
            people([entry])
        return
    [person] = people([entry])
    assert person.quiet is not None and person.quiet.text == good
    bent = good[:where] + junk + good[where:]
    if bent.replace(" ", "") == good:
        return  # spaces are forgiven
    try:
        [read] = people([{**entry, "quiet": bent}])
    except ValueError as exc:
        assert "quiet" in str(exc)
    else:
        assert read.quiet is not None and read.quiet.text == bent.replace(" ", "")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(min_size=1, max_size=12), st.sampled_from(["²", "1²", "-١٢", "@ab"]),
                 st.from_regex(r"-?[0-9]{1,12}", fullmatch=True)))  # fmt: skip
def test_any_address_for_telegram_is_a_chat_id_or_refused(text: str) -> None:
    entry = {"name": "Ben", "channel": "telegram", "address": text}
    try:
        [person] = people([entry])
    except ValueError as exc:
        assert "address" in str(exc)
    else:
        assert person.address is not None
        assert re.fullmatch(r"-?[0-9]+|@[A-Za-z0-9_]{5,}", person.address, re.ASCII)
