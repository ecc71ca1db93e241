"""``loopkit check`` answers without a TOML parser: when the default ``blocked_file`` line
may be read plainly."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ('[escalation]\nblocked_file = "BLOCKED.md"\n', True),
        ("[escalation]\nchannel = 'none'\nblocked_file = 'BLOCKED.md'  # the default\n", True),
        ('[escalation]\nblocked_file = "STOP.md"\n', False),
        ('[loop]\nblocked_file = "BLOCKED.md"\n', False),  # wrong table: the parser says so
        ('escalation.blocked_file = "BLOCKED.md"\n', False),
        ('[escalation]\nblocked_file = "BLOCKED.md"\nblocked_file = "X.md"\n', False),
        ('[escalation]\nblocked_file = "BLOCKED.md\n', False),  # broken: the parser reports it
    ],
)
def test_check_reads_the_default_blocked_file_line_without_a_parser(text: str, plain: bool) -> None:
    from loopkit.check import _sets_the_default

    assert _sets_the_default(text) is plain
