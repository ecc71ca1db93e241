"""NaN and infinity are not durations or numbers; a request id ends where it ends."""

from __future__ import annotations

from pathlib import Path

import pytest

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
