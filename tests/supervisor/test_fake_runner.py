"""The fake runner ends a command as the real one does: the same ``Finished`` — ending, exit
code, tail, error, and (within the real one's slack) duration — for each way a command
ends. The in-process tests of the loop stand on this: a fake kinder than ``Runner`` would
be a test that cannot fail."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes import FakeClock, FakeRunner, Run

from loopkit.config import Command
from loopkit.supervisor.containment import Containment
from loopkit.supervisor.runner import Finished, Runner
from loopkit.watch.wake import Wake

GRACE = 1.0  # kill_grace
SLACK = 0.75  # seconds a real command may take beyond what the fake says (< GRACE)


@dataclass(frozen=True)
class Case:
    real: Command
    fake: Run
    timeout: float | None = 10.0
    stop_after: float | None = None  # seconds: the supervisor's stop comes in
    interrupt: bool = False  # interrupt() is true from the start
    interrupt_grace: float = 0.0


CASES = {
    "exits": Case("echo checked; exit 3", Run(exit_code=3, takes=0.0, output="checked\n")),
    "times out": Case("sleep 30", Run(takes=30), timeout=0.3),
    "ignores SIGTERM": Case("trap '' TERM; sleep 30", Run(takes=30, ignores_term=True), 0.3),
    "exits on SIGTERM": Case("trap 'exit 0' TERM; sleep 30 & wait", Run(takes=30, on_term=0), 0.3),
    "is stopped": Case("sleep 30", Run(takes=30), stop_after=0.3),
    "is interrupted": Case("sleep 30", Run(takes=30), interrupt=True, interrupt_grace=0.3),
    "is not there": Case(("loopkit-no-such-program-3f1",), Run(missing=True)),
    "is not there, by sh": Case("loopkit-no-such-program-3f1", Run(missing=True)),
}


def real(case: Case, tmp_path: Path) -> Finished:
    wake, stop = Wake(), threading.Event()
    runner = Runner(wake=wake, stop=stop, kill_grace=GRACE,
                    containment=Containment(cgroups=False))  # fmt: skip
    timer = None
    if case.stop_after is not None:
        timer = threading.Timer(case.stop_after, lambda: (stop.set(), wake.set()))
        timer.start()
    try:
        return runner.run(case.real, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"},
                          timeout=case.timeout, interrupt=interrupt_of(case),
                          interrupt_grace=case.interrupt_grace)  # fmt: skip
    finally:
        if timer is not None:
            timer.cancel()


def fake(case: Case, tmp_path: Path) -> Finished:
    clock = FakeClock()
    runner = FakeRunner(clock, {"cmd": case.fake}, kill_grace=GRACE)
    if case.stop_after is not None:
        clock.at(case.stop_after, lambda: (runner.stop.set(), runner.wake.set()))
    command: Command = "cmd" if isinstance(case.real, str) else ("cmd",)
    finished = runner.run(command, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin"},
                          timeout=case.timeout, interrupt=interrupt_of(case),
                          interrupt_grace=case.interrupt_grace)  # fmt: skip
    assert finished.duration == pytest.approx(clock.elapsed)  # the fake time it took
    return finished


def _named(text: str, names: dict[str, str]) -> str:
    for real_name, fake_name in names.items():
        text = text.replace(real_name, fake_name)
    return text


def interrupt_of(case: Case) -> Callable[[], bool] | None:
    return (lambda: True) if case.interrupt else None


@pytest.mark.parametrize("name", CASES)
def test_the_fake_ends_a_command_as_the_real_runner_does(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    got, want = fake(case, tmp_path), real(case, tmp_path)
    named = {"loopkit-no-such-program-3f1": "cmd"}  # the fake's name for the program
    assert (got.ending, got.exit_code, got.tail, got.error) == (
        want.ending, want.exit_code, _named(want.tail, named),
        _named(want.error, named) if want.error else None,
    )  # fmt: skip
    assert got.duration <= want.duration < got.duration + SLACK
