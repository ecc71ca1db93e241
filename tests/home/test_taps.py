"""One-tap URLs (loopkit/home/taps.py): signed per request, choice and person, expiring with
their request, used once — and no part of one can be changed and still verify."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.datarecord import replace
from loopkit.home import taps

KEY = "k" * 43
TAP = taps.Tap("0123456789abcdef", "20261202-131106-ab12", 1, "Ben", 1_900_000_000)


def test_a_url_carries_its_signature_and_never_the_key() -> None:
    url = taps.url("http://laptop.vpn:8765/", KEY, TAP)
    parts = urlsplit(url)
    assert parts.path == "/t/0123456789abcdef/20261202-131106-ab12/1"
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query["p"] == "Ben" and query["e"] == "1900000000"
    assert taps.verifies(KEY, TAP, query["s"])
    assert KEY not in url


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["workspace", "request_id", "index", "person", "expires"]),
    st.one_of(st.text(max_size=20), st.integers(0, 2**40)),
)
def test_any_part_changed_no_longer_verifies(part: str, value: object) -> None:
    signature = taps.signature(KEY, TAP)
    kind = type(getattr(TAP, part))
    try:
        changed = replace(TAP, **{part: kind(value)})  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    assert taps.verifies(KEY, changed, signature) == (changed == TAP)
    assert not taps.verifies("another" * 6, TAP, signature)
    assert not taps.verifies(KEY, TAP, signature[:-1] + ("0" if signature[-1] != "0" else "1"))
    assert not taps.verifies(KEY, TAP, "")


def test_a_tap_expires_with_its_request() -> None:
    asked = "2026-12-02T13:00:00Z"
    start = 1_796_216_400  # that moment, in Unix seconds
    assert taps.expires(asked, {"after_minutes": 30, "action": "abort"}) == start + 1800
    assert taps.expires(asked, {"after_minutes": 30, "action": "queue"}) == start + taps.LIFE
    assert taps.expires(asked, None) == start + taps.LIFE


def test_a_tap_is_spent_once_even_by_racing_processes(tmp_path: Path) -> None:
    signature = taps.signature(KEY, TAP)
    won: list[bool] = []
    threads = [threading.Thread(target=lambda: won.append(taps.spend(tmp_path, TAP, signature)))
               for _ in range(8)]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]
    assert taps.spent(tmp_path, TAP, signature)
    assert (tmp_path / "taps").stat().st_mode & 0o777 == 0o700


def test_spent_marks_of_expired_taps_are_cleared(tmp_path: Path) -> None:
    old = replace(TAP, expires=1_000)
    assert taps.spend(tmp_path, old, taps.signature(KEY, old))
    assert taps.spend(tmp_path, TAP, taps.signature(KEY, TAP))
    assert [p.name.split("-")[0] for p in (tmp_path / "taps").iterdir()] == ["1900000000"]


def test_the_key_is_the_inbox_token_made_once(tmp_path: Path) -> None:
    key = taps.secret(tmp_path / "home")
    assert len(key) >= 22 and taps.secret(tmp_path / "home") == key
    assert os.stat(tmp_path / "home" / "inbox.token").st_mode & 0o777 == 0o600
