"""Every corrupt shape of a record is a one-line error naming the file and the field — in
every command that reads it — and a question that joins its block is never lost.

Commands run in-process (``loopkit.cli.invoke.run``, what the console script calls) so the
whole matrix stays fast; a few of them also run as the installed script, end to end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit.cli.invoke import run as invoke

from helpers import loopkit

SHAPES: list[tuple[str, Any]] = [
    ("schema_version", "abc"),
    ("schema_version", -1),
    ("resolution", "yes"),
    ("resolution", {"by": 5}),
    ("options", [1, 2]),
    ("options", [{"label": 3}]),
    ("options", "A, B"),
    ("created_at", 12345),
    ("created_at", "yesterday"),
    ("updated_at", None),
    ("status", "done"),
    ("kind", "poll"),
    ("timeout_default", {"after_minutes": "thirty"}),
    ("timeout_default", {"after_minutes": 1e309}),
    ("timeout_default", []),
    ("delivery", {"channel": "telegram"}),
    ("delivery", ["sent"]),
    ("delivery", [{"at": 7}]),
    ("attempted", [None]),
    ("context_refs", "notes.md"),
    ("joined", [[]]),
    ("iteration", "3"),
    ("iteration", True),
    ("summary", {"context": ["x"]}),
    ("raised_at", "later"),
    ("prompt", None),
    ("request_id", 7),
    ("situation", ["a"]),
    ("block", "blocked"),
    ("block", None),
    ("block", True),
    ("joined_to", 5),
    ("options", [{"label": "A", "consequence": ["x"]}]),
    ("delivery", [{"ok": "yes"}]),
    ("delivery", [{"status": 1.5}]),
    ("delivery", [{"message_id": [7]}]),
    ("delivery", [{"repeat": "no"}]),
    ("delivery", [{"channel": "telegram", "within_send": 1}]),
    ("resolution", {"reason": 3}),
    ("resolution", {"by_id": [1]}),
    ("resolution", {"reply": {"text": "A"}}),
    ("options", [{"label": "Abort", "aliases": "stop"}]),
    ("options", [{"label": "Abort", "aliases": ["stop", 3]}]),
    ("resolution", {"matched_by": ["letter"]}),
]


def blocked_workspace(ws: Path, capfd: pytest.CaptureFixture[str]) -> str:
    (ws / "loopkit.toml").write_text('[escalation]\nchannel = "none"\n')
    code = invoke(["-C", str(ws), "escalate", "-q", "Which flow?", "-c", "checkout", "-a", "read",
                   "--choice", "A — keep", "--choice", "B — migrate"])  # fmt: skip
    assert code == 2
    capfd.readouterr()
    (path,) = (ws / "requests").glob("*.json")
    return path.stem


def corrupt(ws: Path, request_id: str, field: str, value: Any) -> Path:
    path = ws / "requests" / f"{request_id}.json"
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    return path


def commands(request_id: str) -> list[list[str]]:
    return [
        ["requests", "show", request_id],
        ["requests"],
        ["requests", "wait", request_id, "--timeout", "0"],
        ["status"],
        ["status", "--json"],
        ["reply", "--request-id", request_id, "--reply", "A"],
        ["unblock", "--reply", "A"],
        ["unblock"],
        ["resend"],
        ["inbox"],
        ["doctor"],
        [
            "ask",
            "-s",
            "deploy",
            "-p",
            "ship rules",
            "-q",
            "Ship it?",
            "--option",
            "yes",
            "--option",
            "no",
        ],
        ["gate", "--", "true"],
        ["escalate", "-q", "Second question?", "-c", "more", "-a", "looked", "--choice", "Go — on"],
    ]


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("loopkit: error")]
    assert "Traceback" not in err and "unexpected error" not in err, err
    return lines[0] if lines else ""


@pytest.mark.parametrize(("field", "value"), SHAPES, ids=[f"{f}={v!r}" for f, v in SHAPES])
def test_a_corrupt_record_is_a_one_line_error_in_every_command(
    ws: Path, capfd: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    request_id = blocked_workspace(ws, capfd)
    path = corrupt(ws, request_id, field, value)
    before = path.read_text()
    for args in commands(request_id):
        code = invoke(["-C", str(ws), *args])
        err = capfd.readouterr().err
        line = one_line_error(err)
        assert code != 1, (args, err)
        if code == 65:
            assert path.name in line and field in line, (args, line)
    assert path.read_text() == before  # loopkit never rewrites what it cannot read
    # The second question joined a block whose request is unreadable: it is kept as its own.
    kept = [json.loads(p.read_text()) for p in (ws / "requests").glob("*.json") if p != path]
    assert any(r.get("prompt") == "Second question?" for r in kept)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    field=st.sampled_from(sorted({f for f, _ in SHAPES} | {"delivery", "deferrals", "gate"})),
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=6,
    ),
)
def test_any_value_in_any_field_loads_or_is_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    capfd: pytest.CaptureFixture[str],
    field: str,
    value: Any,
) -> None:
    ws = tmp_path_factory.mktemp("ws")
    request_id = blocked_workspace(ws, capfd)
    corrupt(ws, request_id, field, value)
    for args in (["requests", "show", request_id], ["status", "--json"], ["inbox"]):
        code = invoke(["-C", str(ws), *args])
        err = capfd.readouterr().err
        one_line_error(err)
        assert code in (0, 65), (args, code, err)


@pytest.mark.parametrize(
    ("field", "value"), [("adopted", "yes"), ("block_pending", 1), ("joined_block", 5)]
)
def test_a_corrupt_version_1_lifecycle_field_is_named(
    ws: Path, capfd: pytest.CaptureFixture[str], field: str, value: Any
) -> None:
    """A record written by version 1 is checked before it is migrated: its own fields."""
    request_id = blocked_workspace(ws, capfd)
    path = corrupt(ws, request_id, "schema_version", 1)
    corrupt(ws, request_id, field, value)
    before = path.read_text()
    for args in (["requests", "show", request_id], ["status"], ["requests"]):
        code = invoke(["-C", str(ws), *args])
        line = one_line_error(capfd.readouterr().err)
        assert code in (0, 65), (args, line)
        if code == 65:
            assert path.name in line and field in line, (args, line)
    assert invoke(["-C", str(ws), "requests", "show", request_id]) == 65
    assert path.read_text() == before


def test_the_installed_script_says_it_in_one_line(
    ws: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    request_id = blocked_workspace(ws, capfd)
    corrupt(ws, request_id, "options", [1, 2])
    done = loopkit("-C", str(ws), "requests", "show", request_id)
    assert done.returncode == 65
    [line] = done.stderr.strip().splitlines()
    assert "options" in line and f"{request_id}.json" in line


def test_a_record_nested_thousands_deep_is_refused(
    ws: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    request_id = blocked_workspace(ws, capfd)
    path = ws / "requests" / f"{request_id}.json"
    path.write_text('{"request_id": "x", "prompt": "p", "gate": ' + "[" * 5000 + "]" * 5000 + "}")
    for args in (["requests", "show", request_id], ["status"], ["requests"]):
        code = invoke(["-C", str(ws), *args])
        err = capfd.readouterr().err
        line = one_line_error(err)
        assert code in (0, 65), (args, err)
        if code == 65:
            assert "nested deeper" in line
