"""NaN and infinity are not durations or numbers; a request id ends where it ends; any
loopkit.toml at all loads or is one config error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit import config as config_mod
from loopkit.errors import BadInput, ConfigError
from loopkit.requests.record import validate_id


@pytest.mark.parametrize(
    "line",
    ["[loop]\npause = nan", "[loop]\niteration_timeout = inf",
     "[escalation]\ntimeout_minutes = nan", "[escalation]\ntimeout_minutes = inf",
     "[escalation]\nretry_backoff = -inf"],
)  # fmt: skip
def test_nan_and_inf_are_config_errors(ws: Path, line: str) -> None:
    (ws / "loopkit.toml").write_text(line + "\n")
    with pytest.raises(ConfigError, match=r"loopkit.toml:2"):
        config_mod.load(ws)


@pytest.mark.parametrize("request_id", ["x\n", "abc\n", "a b", "../x", ""])
def test_ids_match_to_their_very_end(request_id: str) -> None:
    with pytest.raises(BadInput):
        validate_id(request_id)


_VALUES = st.recursive(
    st.none().map(lambda _: "")
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)
_KEYS = st.sampled_from(
    [(table, key) for table, keys in config_mod._SCHEMA.items() for key in keys]
    + [("loop", "agnet"), ("nonsense", "x")]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=st.lists(st.tuples(_KEYS, _VALUES), max_size=4))
def test_any_config_loads_or_is_one_config_error(ws: Path, entries: list[Any]) -> None:
    tables: dict[str, dict[str, Any]] = {}
    for (table, key), value in entries:
        tables.setdefault(table, {})[key] = value
    (ws / "loopkit.toml").write_text(tomli_w.dumps(tables))
    for lenient in (False, True):
        try:
            loaded = config_mod.load(ws, {}, lenient=lenient)
        except ConfigError as exc:
            assert "\n" not in str(exc) and "loopkit.toml" in str(exc)
        else:
            assert loaded.loop.pause >= 0 and loaded.escalation.timeout_minutes > 0


@pytest.mark.parametrize(
    "line",
    ["[loop]\npause = 1e10", "[loop]\niteration_timeout = 1e300", '[loop]\nkill_grace = "9999999h"',
     "[escalation]\ntimeout_minutes = 1e10", "[escalation]\nretry_backoff = 31708800",
     '[escalation]\nremind_every = "8785h"'],
)  # fmt: skip
def test_a_duration_past_a_year_is_a_config_error(ws: Path, line: str) -> None:
    """SPEC §28: ``pause = 1e10`` (317 years) was accepted and crashed the loop mid-run (a
    clock cannot hold it): every duration is at most a year, refused at load."""
    (ws / "loopkit.toml").write_text(line + "\n")
    with pytest.raises(ConfigError, match=r"loopkit.toml:2: .*(over a year|at most)"):
        config_mod.load(ws)


def test_a_year_itself_is_a_duration(ws: Path) -> None:
    text = '[loop]\npause = "8784h"\n[escalation]\ntimeout_minutes = 527040\n'
    (ws / "loopkit.toml").write_text(text)
    loaded = config_mod.load(ws)
    assert loaded.loop.pause == 366 * 86400 and loaded.escalation.timeout_minutes == 527040
