"""The events loopkit writes: one JSON object per line, redacted, with name, level and time."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopkit import log, structured
from loopkit.redact import Redactor

SECRET = "424242:AAsecretTokenForTheEventsTest_xyz"


@pytest.fixture(params=["short command", "long-running"])
def events(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, io.StringIO]]:
    """The events of a short command (loopkit.log alone) and of a long-running process
    (structlog's chain, loopkit.structured): the same lines either way."""
    console = io.StringIO()
    path = tmp_path / ".loopkit" / "events.jsonl"
    setup = structured.setup if request.param == "long-running" else log.setup
    setup(path, Redactor([SECRET]), stream=console, console_level="info")
    yield path, console
    structured.reset()
    log.reset()


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_event_is_one_redacted_json_line_with_its_fields(
    events: tuple[Path, io.StringIO],
) -> None:
    path, console = events
    log.get_logger("loopkit.test").info("sent", url=f"https://x/bot{SECRET}/m", n=3, msg="done")
    [line] = lines(path)
    assert line["event"] == "sent" and line["n"] == 3 and line["logger"] == "loopkit.test"
    assert line["level"] == "info" and SECRET not in json.dumps(line)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", str(line["timestamp"]))
    assert console.getvalue() == "loopkit: done\n"


def test_another_librarys_record_is_redacted_too(events: tuple[Path, io.StringIO]) -> None:
    path, console = events
    logging.getLogger("httpx").info("HTTP Request: POST https://api/bot%s/getMe", SECRET)
    [line] = lines(path)
    assert line["logger"] == "httpx" and "getMe" in str(line["event"])
    assert SECRET not in path.read_text() and console.getvalue() == ""  # INFO: file only


def test_an_exception_is_kept_and_a_file_only_event_stays_off_the_console(
    events: tuple[Path, io.StringIO],
) -> None:
    path, console = events
    try:
        raise ValueError(f"bad token {SECRET}")
    except ValueError as exc:
        log.get_logger("loopkit").error("unexpected_error", exc_info=exc, _console=False)
    [line] = lines(path)
    assert "ValueError" in str(line["exception"]) and SECRET not in path.read_text()
    assert "_console" not in line and console.getvalue() == ""


def test_warnings_reach_the_console_with_their_level(events: tuple[Path, io.StringIO]) -> None:
    _, console = events
    log.get_logger("loopkit.x").warning("slow", msg="the channel is slow")
    log.get_logger("loopkit.x").debug("detail", msg="not shown at info")
    assert console.getvalue() == "loopkit: warning: the channel is slow\n"


def test_capture_sees_every_level_of_loopkits_own_events() -> None:
    with log.capture() as seen:
        log.get_logger("loopkit.t").debug("one", a=1)
        logging.getLogger("httpx").warning("not ours")
    assert [(e["event"], e["a"]) for e in seen] == [("one", 1)]


def test_logging_imports_no_structured_logging_library() -> None:
    probe = "import sys, loopkit.log as l; l.get_logger('x').info('e'); print(sorted(sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "structlog" not in done.stdout and "asyncio" not in done.stdout


BRIDGED_LATER = """
import io, json, sys
from pathlib import Path
from loopkit import log
from loopkit.redact import Redactor
assert "logging" not in sys.modules  # nothing imported it yet
console = io.StringIO()
log.setup(Path(sys.argv[1]), Redactor([sys.argv[2]]), stream=console, console_level="info")
log.get_logger("loopkit.t").info("ours", msg="shown")
assert "logging" not in sys.modules  # loopkit's own events need no stdlib logging
import logging  # as a library does, after setup
log.bridge()  # as loopkit does where it brings in a library that logs (a channel's client)
logging.getLogger("httpx").info("GET https://api/bot%s/getMe", sys.argv[2])
logging.getLogger("lib").warning("careful")
logging.getLogger("lib").debug("never")
print(json.dumps(console.getvalue()))
"""


def test_a_library_loaded_after_setup_is_bridged_redacted_where_loopkit_brings_it_in(
    tmp_path: Path,
) -> None:
    path = tmp_path / "events.jsonl"
    done = subprocess.run([sys.executable, "-c", BRIDGED_LATER, str(path), SECRET],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == "loopkit: shown\nloopkit: warning: careful\n"
    events = [(e["logger"], e["level"]) for e in lines(path)]
    assert events == [("loopkit.t", "info"), ("httpx", "info"), ("lib", "warning")]
    assert SECRET not in path.read_text() and "getMe" in path.read_text()


def test_logging_once_imported_is_bridged_once(events: tuple[Path, io.StringIO]) -> None:
    path, _ = events
    log.setup(path, Redactor([SECRET]), stream=io.StringIO(), console_level="info")
    log.bridge()
    logging.getLogger("lib").info("once")
    assert [e["event"] for e in lines(path)] == ["once"]


STRUCTURED_PROBE = """
import sys
from loopkit import log, structured
from loopkit.redact import Redactor
structured.setup(None, Redactor([]), console=False)
assert type(log._SINKS.structured).__name__ == "function" and "structlog" in sys.modules
print("ok")
"""


def test_the_long_running_setup_runs_every_event_through_structlog() -> None:
    done = subprocess.run([sys.executable, "-c", STRUCTURED_PROBE], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout == "ok\n"


def test_no_import_hook_is_left_on_the_import_system(events: tuple[Path, io.StringIO]) -> None:
    assert not [f for f in sys.meta_path if type(f).__module__.startswith("loopkit")]
