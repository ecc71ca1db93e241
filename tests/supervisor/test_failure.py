"""A verify failure read as its failing tests and their first error lines (SPEC §25): the
same failure in another run's noise is one failure; fewer failing tests, another failing
test or message, a later failing step are another; the question's line is the failing test's
first error line, never the runner's summary."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.supervisor.failure import read

PYTEST = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0
rootdir: /tmp/pytest-of-ci/pytest-{run}/shop
collected {collected} items

tests/test_api.py ..F.{dots}                                              [100%]

=================================== FAILURES ===================================
_______________________________ test_create_order ______________________________

client = <starlette.testclient.TestClient object at 0x7f3a2b1c{run:04d}>

    def test_create_order(client):
        response = client.post("/orders", json={{"sku": "mug"}})
>       assert response.status_code == 201
E       assert {status} == 201
E        +  where {status} = <Response [{status}]>.status_code

tests/test_api.py:{line}: AssertionError
----------------------------- Captured log call -------------------------------
INFO     httpx:_client.py:1025 HTTP Request: POST http://testserver:{port}/orders "{status}"
=========================== short test summary info ============================
FAILED tests/test_api.py::test_create_order - assert {status} == 201
========================= 1 failed, {passed} passed in 0.{run}s =========================
"""


def pytest_run(run: int = 41, status: int = 404, passed: int = 12, line: int = 18) -> str:
    return PYTEST.format(run=run, status=status, passed=passed, line=line, port=50000 + run,
                         collected=passed + 1, dots="." * passed)  # fmt: skip


def test_the_same_failure_in_another_run_is_the_same() -> None:
    one, two = read(pytest_run()), read(pytest_run(run=97, passed=19, line=44))
    assert one.key == two.key
    assert one.tests == ("tests/test_api.py::test_create_order",)
    assert one.count == 1


def test_the_question_gets_the_failing_test_and_its_first_error_line() -> None:
    failure = read(pytest_run())
    assert failure.test == "tests/test_api.py::test_create_order"
    assert failure.line == "E assert 404 == 201"
    assert "passed" not in failure.line


def test_another_failing_test_or_another_message_is_another_failure() -> None:
    base = read(pytest_run())
    other_test = read(pytest_run().replace("test_create_order", "test_cancel_order"))
    other_message = read(pytest_run().replace("assert 404 == 201", "assert 404 != 201"))
    assert len({base.key, other_test.key, other_message.key}) == 3


def test_a_value_the_check_got_is_not_another_failure() -> None:
    """The same check failing with another value (404, then 500; 1998, then 2000) is the
    same failure: the number a check got varies with every attempt at it."""
    assert read(pytest_run(status=404)).key == read(pytest_run(status=500)).key


def test_fewer_failing_tests_are_counted() -> None:
    many = "\n".join(f"FAILED tests/test_x.py::test_{n} - assert False" for n in range(20))
    fewer = "\n".join(f"FAILED tests/test_x.py::test_{n} - assert False" for n in range(15))
    assert read(many + "\n===== 20 failed in 1.2s =====").count == 20
    assert read(fewer + "\n===== 15 failed in 1.1s =====").count == 15


def test_a_later_failing_step_is_another_failure() -> None:
    lint = "shop/cart.py:3:1: F401 [*] `os` imported but unused\nFound 1 error.\n"
    tests = pytest_run()
    assert read(lint).key != read(tests).key


@pytest.mark.parametrize(
    ("output", "tests", "line"),
    [
        (
            "--- FAIL: TestTotal (0.00s)\n    cart_test.go:14: got 1998, want 1999\nFAIL\n"
            "FAIL\tshop/cart\t0.004s\n",
            ("TestTotal",),
            "cart_test.go:<line>: got <n>, want <n>",
        ),
        (
            "running 3 tests\ntest cart::total ... FAILED\ntest cart::add ... ok\n\nfailures:\n\n"
            "---- cart::total stdout ----\nthread 'cart::total' panicked at src/cart.rs:9:5:\n"
            "assertion `left == right` failed\n\ntest result: FAILED. 2 passed; 1 failed;\n",
            ("cart::total",),
            "thread 'cart::total' panicked at src/cart.rs:<line>:",
        ),
        (
            "FAIL src/cart.test.ts\n  cart\n    ✕ totals in cents (3 ms)\n\n  ● cart › totals in "
            "cents\n\n    expect(received).toBe(expected)\n\nTests:       1 failed, 4 passed, "
            "5 total\n",
            ("cart › totals in cents", "totals in cents"),
            "expect(received).toBe(expected)",
        ),
        (
            "F.\n======================================================================\nFAIL: "
            "test_total (tests.test_cart.CartTest.test_total)\n----------------------------------"
            "------------------------------------\nTraceback (most recent call last):\n  File "
            '"/home/u/shop/tests/test_cart.py", line 9, in test_total\nAssertionError: 1998 != '
            "1999\n\nFAILED (failures=1)\n",
            ("tests.test_cart.CartTest.test_total",),
            "AssertionError: <n> != <n>",
        ),
    ],
    ids=["go", "cargo", "jest", "unittest"],
)
def test_other_runners_failing_tests_are_read(
    output: str, tests: tuple[str, ...], line: str
) -> None:
    failure = read(output)
    assert set(tests) <= set(failure.tests) or set(failure.tests) <= set(tests), failure
    assert line in failure.lines, failure


def test_no_output_is_still_a_failure_with_its_exit() -> None:
    assert read("", exit_code=2).key != read("", exit_code=1).key
    assert read("").line == "(no output)"


WORD = st.text(string.ascii_lowercase, min_size=2, max_size=10)


@settings(max_examples=200, deadline=None)
@given(
    names=st.tuples(WORD, WORD),
    messages=st.tuples(st.lists(WORD, min_size=1, max_size=5), st.lists(WORD, min_size=1,
                                                                         max_size=5)),
    noise=st.tuples(st.integers(1, 99999), st.integers(1, 99999)),
)  # fmt: skip
def test_failures_differing_in_a_test_or_a_word_of_the_message_never_merge(
    names: tuple[str, str], messages: tuple[list[str], list[str]], noise: tuple[int, int]
) -> None:
    def render(name: str, message: list[str], n: int) -> str:
        return (f"_____ test_{name} _____\n\nE       AssertionError: {' '.join(message)} {n}\n\n"
                f"tests/test_x.py:{n}: AssertionError\nFAILED tests/test_x.py::test_{name} - "
                f"AssertionError: {' '.join(message)} {n}\n===== 1 failed, {n} passed in "
                f"0.{n}s =====\n")  # fmt: skip

    first = read(render(names[0], messages[0], noise[0]))
    assert first.key == read(render(names[0], messages[0], noise[1])).key
    if names[0] != names[1]:
        assert first.key != read(render(names[1], messages[0], noise[1])).key
    if messages[0] != messages[1]:
        assert first.key != read(render(names[0], messages[1], noise[1])).key


def test_a_redacted_secret_at_the_end_of_the_line_is_kept() -> None:
    """``***`` is what the redactor leaves of a secret, not a banner to strip."""
    assert read("auth failed for ***\n").line == "auth failed for ***"
    assert read("===== 1 failed in 0.2s =====\n").line == "1 failed in 0.2s"
