"""A runaway or hostile agent cannot fill the disk (SPEC section 17): an iteration's log keeps
at most ``[loop] max_log`` bytes and the console shows at most as much of one command, each
saying in one line how much was cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopkit.config.values import parse_size
from loopkit.redact import Redactor
from loopkit.supervisor.iterlog import Capped, IterationLog

from helpers import loopkit, setup

KB = 1024


def test_capped_passes_the_limit_then_counts() -> None:
    seen: list[bytes] = []
    cap = Capped(seen.append, 10)
    for chunk in (b"12345", b"67890abc", b"", b"defg"):
        cap.write(chunk)
    assert b"".join(seen) == b"1234567890"
    cap.note()
    assert seen[-1] == b"\n[\xe2\x80\xa6 7 bytes cut: [loop] max_log is 10]\n"
    cap.note()  # said once
    assert seen[-1].startswith(b"\n[")
    assert len([s for s in seen if s.startswith(b"\n[")]) == 1


def test_an_iteration_log_is_cut_at_its_limit(tmp_path: Path) -> None:
    log = IterationLog(tmp_path, 1, redactor=Redactor(()), limit=64 * KB)
    log.begin("--- agent")
    line = b"y" * 99 + b"\n"
    for _ in range(5000):  # 500 kB
        log.write(line)
    log.end("--- agent: exit 0")
    log.begin("--- verify")
    log.write(b"verify says something\n")
    log.end("--- verify: exit 1")
    log.close()
    data = (tmp_path / "iteration-1.log").read_bytes()
    assert len(data) < 64 * KB + 200
    assert b"bytes cut: [loop] max_log" in data
    assert data.count(b"bytes cut") == 2  # each command's own cut, where it was dropped
    assert data.rstrip().endswith(b"--- verify: exit 1")


@pytest.mark.parametrize(
    ("given", "size"),
    [(65536, 65536), ("64kB", 65536), ("50MB", 50 * KB * KB), ("1.5 MiB", int(1.5 * KB * KB)),
     ("1G", KB**3)],
)  # fmt: skip
def test_sizes(given: object, size: int) -> None:
    assert parse_size(given) == size


@pytest.mark.parametrize("given", ["", "lots", -1, 1024, "10 kB", True, 1.5])
def test_bad_sizes_are_refused(given: object) -> None:
    with pytest.raises(ValueError):
        parse_size(given)


def test_a_loud_agent_is_cut_in_the_log_and_on_the_console(ws: Path) -> None:
    loud = "python3 -c \"import sys; sys.stdout.write(('z' * 99 + '\\n') * 20000)\"\n"
    setup(ws, 'max_log = "64kB"\nverify = "true"\ndone = "true"', agent=loud)
    done = loopkit("-C", str(ws), "run", "--max-iterations", "1")
    assert done.returncode == 0, done.stderr
    logged = (ws / ".loopkit" / "logs" / "iteration-1.log").read_bytes()
    assert len(logged) < 70 * KB, len(logged)
    assert b"bytes cut: [loop] max_log is 65536" in logged
    assert done.stdout.count("z" * 99) < 70 * KB // 100
    assert "bytes cut: [loop] max_log is 65536" in done.stdout
