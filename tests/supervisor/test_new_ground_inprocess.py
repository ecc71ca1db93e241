"""SPEC §25 in the loop, in process (a fake runner and clock; the workspace, request store,
escalator and BLOCKED.md real): the repetition signals and ``max_verify_failures`` count only
iterations that broke no new ground — so a healthy-but-slow loop is never asked about, and a
loop that only touches timestamps or comments, or flips back, is."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import Call, FakeClock, FakeRunner, Run, loop_config, supervisor

from loopkit.config import StuckConfig
from loopkit.errors import EXIT_BLOCKED, EXIT_OK
from loopkit.escalation import blockfile
from loopkit.requests.record import Request
from loopkit.supervisor.loop import Supervisor

pytestmark = pytest.mark.usefixtures("no_subprocesses")

E2E_RED = """\
=================================== FAILURES ===================================
_______________________________ test_create_order ______________________________

    def test_create_order(client):
>       assert client.post("/orders", json={{"sku": "mug"}}).status_code == 201
E       assert 404 == 201
E        +  where 404 = <Response [404]>.status_code

tests/test_e2e.py:{line}: AssertionError
=========================== short test summary info ============================
FAILED tests/test_e2e.py::test_create_order - assert 404 == 201
========================= 1 failed, {passed} passed in 0.{n}s =========================
"""


def n_of(call: Call) -> int:
    return int(call.env["LOOPKIT_ITERATION"])


def run(ws: Path, agent: object, verify: object, iterations: int = 12, **loop: object) -> tuple[
        Supervisor, int]:  # fmt: skip
    clock = FakeClock()
    runner = FakeRunner(clock, {"agent": agent, "verify": verify, "done": Run(1)})  # type: ignore[dict-item]
    config = loop_config(ws, stuck=StuckConfig(), **loop)
    sup = supervisor(config, clock, runner, exit_on_block=True, max_iterations=iterations)
    return sup, sup.run()


def the_block(sup: Supervisor, ws: Path) -> Request:
    request_id = blockfile.request_id_of(ws / "BLOCKED.md")
    assert request_id is not None
    return sup.parts.store.load(request_id)


def test_a_test_red_while_the_layers_beneath_it_land_is_never_asked(ws: Path) -> None:
    """The same failure for twelve iterations while a new layer lands each one: neither
    ``max_verify_failures`` nor ``same_error`` nor the agent's terse repeated summary asks."""

    def layer(call: Call) -> Run:
        n = n_of(call)

        def write(call: Call) -> None:
            body = f"class Layer{n}:\n    def handle(self, request):\n"
            (Path(call.cwd) / f"layer{n}.py").write_text(
                f"{body}        return self.next(request)\n"
            )

        return Run(output="Added the next layer of the order endpoint; the e2e test is still "
                          "red until the route is wired.\n", does=write)  # fmt: skip

    def verify(call: Call) -> Run:
        return Run(1, output=E2E_RED.format(line=10 + n_of(call), passed=20 + n_of(call),
                                            n=n_of(call)))  # fmt: skip

    sup, code = run(ws, layer, verify)
    assert code == EXIT_OK, the_block(sup, ws).prompt
    assert not list(sup.parts.store.all())


def test_fewer_failing_tests_each_run_is_progress(ws: Path) -> None:
    """20 → 15 → 9 → 4 → 0 failing while the agent rewrites one file's same lines."""
    counts = [20, 15, 9, 4, 0]

    def agent(call: Call) -> Run:
        def rewrite(call: Call) -> None:
            (Path(call.cwd) / "cart.py").write_text(f"ROUNDING = {n_of(call)}\n")

        return Run(output="Fixed another batch of the failing tests.\n", does=rewrite)

    def verify(call: Call) -> Run:
        failing = counts[n_of(call) - 1]
        lines = [f"FAILED tests/test_cart.py::test_case_{k} - assert False" for k in range(failing)]
        summary = f"===== {failing} failed, {40 - failing} passed in 1.2s ====="
        return Run(1 if failing else 0, output="\n".join([*lines, summary]) + "\n")

    sup, code = run(ws, agent, verify, iterations=5)
    assert code == EXIT_OK
    assert not list(sup.parts.store.all())


def progress_note(ws: Path, n: int) -> None:
    (ws / "PROGRESS.md").write_text(
        f"# Progress\n\nAll tasks done.\nLast checked: 2026-12-03T10:{n:02d}:00Z\n"
    )


def todo(ws: Path, n: int) -> None:
    with (ws / "app.py").open("a") as handle:
        handle.write(f"# TODO({n}): revisit the rounding\n")


def release(ws: Path, n: int) -> None:
    (ws / "pyproject.toml").write_text(f'[project]\nname = "shop"\nversion = "1.0.{n}"\n')


@pytest.mark.parametrize("touch", [progress_note, todo, release],
                         ids=["timestamp", "todo-comment", "version-bump"])  # fmt: skip
def test_touching_only_timestamps_comments_or_versions_once_the_plan_is_done_is_no_progress(
    ws: Path, touch: object
) -> None:
    """The task list is done, ``done`` never says so, and the agent goes on making changes
    of no new ground: a heartbeat, a TODO, a release bump."""
    (ws / "PLAN.md").write_text("- [x] cart\n- [x] export\n")
    (ws / "app.py").write_text("def total(cart):\n    return sum(cart)\n")
    progress_note(ws, 0)
    release(ws, 0)

    def agent(call: Call) -> Run:
        return Run(output="All tasks are done; refreshed the progress notes.\n",
                   does=lambda call: touch(Path(call.cwd), n_of(call)))  # type: ignore[operator]  # fmt: skip

    sup, code = run(ws, agent, Run(output="12 passed in 0.3s\n"), task_file="PLAN.md",
                    done="done")  # fmt: skip
    assert code == EXIT_BLOCKED
    record = the_block(sup, ws)
    assert (record.trigger, record.iteration) == ("stuck-no-progress", 3)


def test_a_failure_flipping_between_two_ways_is_caught(ws: Path) -> None:
    """A, B, A, B: a failure that comes back is not new; nor are the agent's flips."""
    failures = ["E   ImportError: cannot import name 'Cart'", "E   NameError: name 'Cart'"]

    def agent(call: Call) -> Run:
        quote = "'" if n_of(call) % 2 else '"'

        def flip(c: Call) -> None:
            (Path(c.cwd) / "app.py").write_text(f"X = {quote}x{quote}\n")

        return Run(output="Switched the import style.\n", does=flip)

    def verify(call: Call) -> Run:
        return Run(1, output=failures[n_of(call) % 2] + "\n")

    sup, code = run(ws, agent, verify)
    assert code == EXIT_BLOCKED
    record = the_block(sup, ws)
    # 1 reached the line, 2 failed a new way (B after A); from then on nothing is new.
    assert record.iteration == 5
    assert record.trigger in ("stuck-no-progress", "verify-failures")
