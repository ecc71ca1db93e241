"""The normaliser masks what changes from run to run and keeps what says which error it is."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.supervisor.normalise import fingerprint, normalise

PYTEST_RUN_1 = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0
rootdir: /tmp/pytest-of-ci/pytest-41/test_checkout0
collected 57 items

tests/test_checkout.py ...F.....                                         [100%]

=================================== FAILURES ===================================
___________________________ test_total_in_cents ________________________________

    def test_total_in_cents():
>       assert cart.total() == 1999
E       assert 19.99 == 1999
E        +  where 19.99 = <bound method Cart.total of <shop.cart.Cart object at 0x7f3a2b1c9d90>>()

tests/test_checkout.py:42: AssertionError
=========================== short test summary info ============================
FAILED tests/test_checkout.py::test_total_in_cents - assert 19.99 == 1999
========================= 1 failed, 56 passed in 0.84s =========================
"""

PYTEST_RUN_2 = (
    PYTEST_RUN_1.replace("pytest-41", "pytest-42")
    .replace("0x7f3a2b1c9d90", "0x7f11aa02be50")
    .replace(":42:", ":47:")
    .replace("0.84s", "1.02s")
)


def test_the_same_pytest_failure_run_twice_is_one_fingerprint() -> None:
    assert PYTEST_RUN_1 != PYTEST_RUN_2
    assert fingerprint(PYTEST_RUN_1) == fingerprint(PYTEST_RUN_2)


def test_another_failing_test_is_another_fingerprint() -> None:
    other = PYTEST_RUN_1.replace("test_total_in_cents", "test_total_with_tax")
    assert fingerprint(other) != fingerprint(PYTEST_RUN_1)
    # The summary's counts are noise here (SPEC §25): fewer failing tests is read from the
    # failing tests themselves (tests/supervisor/test_failure.py).
    more = PYTEST_RUN_1.replace("1 failed, 56 passed", "1 failed, 57 passed")
    assert fingerprint(more) == fingerprint(PYTEST_RUN_1)


def test_each_kind_of_noise_is_masked() -> None:
    text = (
        "2026-12-03T20:53:51.123Z ERROR worker pid 4242 at 0x7f3a2b\n"
        "src/app.ts(12,5): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        " --> src/main.rs:4:18\n"
        '4 |     let x: i32 = "a";\n'
        "/tmp/tmpab3k9x/out.json: no such file\n"
        'File "/home/u/x.py", line 12, in f\n'
        "Finished in 2m 3s; took 340ms; Thu Dec  3 20:53:51 UTC 2026; seed=8812734\n"
    )
    assert normalise(text) == (
        "<time> ERROR worker pid <pid> at <hex>\n"
        "src/app.ts(<line>): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "--> src/main.rs:<line>\n"
        '<line> | let x: i32 = "a";\n'
        "<tmp>/<tmp>/out.json: no such file\n"
        'File "/home/u/x.py", line <line>, in f\n'
        "Finished in <duration>; took <duration>; <time>; seed=<seed>"
    )


def test_a_tag_the_text_already_spells_is_not_a_mask() -> None:
    assert normalise("at <time>") != normalise("at 12:00:01")
    assert normalise("ratio <line>") != normalise("ratio line 7")


NAME = st.text(string.ascii_lowercase + "_", min_size=1, max_size=12)
PATH = st.lists(NAME, min_size=1, max_size=3).map(lambda parts: "/".join(parts))
WORDS = st.lists(st.text(string.ascii_letters, min_size=1, max_size=10), min_size=1, max_size=8)
SHAPES = [
    "{file}.py:{line}: {message}",
    "FAILED tests/{file}.py::test_{name} - AssertionError: {message}",
    "{file}.ts({line},{col}): error TS2322: {message}",
    "error[E0308]: {message}\n --> src/{file}.rs:{line}:{col}",
    "/tmp/pytest-of-ci/pytest-{pid}/{name}0/{file}.json: {message}",
    "[{time}] pid {pid}: {file}: {message} (took {line}ms, at 0x{pid:x})",
]


@settings(max_examples=300, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    files=st.tuples(PATH, PATH),
    names=st.tuples(NAME, NAME),
    messages=st.tuples(WORDS.map(" ".join), WORDS.map(" ".join)),
    numbers=st.tuples(*[st.integers(1, 99999)] * 6),
    which=st.sampled_from(["file", "name", "message"]),
)
def test_masking_never_merges_errors_that_differ_in_a_file_name_or_a_message(
    shape: str,
    files: tuple[str, str],
    names: tuple[str, str],
    messages: tuple[str, str],
    numbers: tuple[int, ...],
    which: str,
) -> None:
    """Two errors that differ in a file name, a test name or a message — whatever the noise
    around them (each its own times, line numbers, pids, addresses) — never share a print;
    the same error with other noise always does."""
    line1, col1, pid1, line2, col2, pid2 = numbers

    def render(file: str, name: str, message: str, line: int, col: int, pid: int) -> str:
        time = f"2026-12-0{1 + pid % 9}T1{pid % 10}:0{line % 10}:3{col % 10}Z"
        return shape.format(file=file, name=name, message=message, line=line, col=col,
                             pid=pid, time=time)  # fmt: skip

    first = render(files[0], names[0], messages[0], line1, col1, pid1)
    again = render(files[0], names[0], messages[0], line2, col2, pid2)
    assert fingerprint(first) == fingerprint(again), (first, again)
    varied = {
        "file": (files[1], names[0], messages[0]),
        "name": (files[0], names[1], messages[0]),
        "message": (files[0], names[0], messages[1]),
    }[which]
    other = render(*varied, line2, col2, pid2)
    differs = varied != (files[0], names[0], messages[0])
    # the name only shows in some shapes
    if differs and (which != "name" or "{name}" in shape):
        assert fingerprint(first) != fingerprint(other), (first, other)


# SPEC §25: what else varies from run to run — each kind alone, in a real runner's shape.
RUN_TO_RUN = [
    # an epoch timestamp (seconds, with a fraction; milliseconds)
    ("E   assert 1796421449.46 < deadline", "E   assert 1796421881.02 < deadline"),
    ("cache written at 1796421449123 (ms)", "cache written at 1796421503877 (ms)"),
    # a random port on the loopback, in a URL and alone
    (
        "httpx.ConnectError: [Errno 111] Connection refused: http://localhost:53552/api",
        "httpx.ConnectError: [Errno 111] Connection refused: http://localhost:40117/api",
    ),
    ("OSError: bind 127.0.0.1:53552 failed", "OSError: bind 127.0.0.1:8123 failed"),
    ("listening on port 53552, retrying", "listening on port 61002, retrying"),
    # random numbers inside a temporary name, the last part of the path included
    ("FileNotFoundError: /tmp/pytest-97882", "FileNotFoundError: /tmp/pytest-11234"),
    ("cannot open /tmp/tmpab3k9xq1", "cannot open /tmp/tmpz0pp2w8e"),
    # counts in a summary line
    (
        "===== 1 failed, 12 passed, 2 skipped in 0.84s =====",
        "===== 1 failed, 13 passed, 3 skipped in 0.91s =====",
    ),
    (
        "Found 12 errors in 3 files (checked 40 source files)",
        "Found 13 errors in 4 files (checked 41 source files)",
    ),
    ("collected 57 items", "collected 61 items"),
    # a test-order seed
    ("Using --randomly-seed=3721810131", "Using --randomly-seed=1099123"),
    ("hash randomization: PYTHONHASHSEED=4242", "hash randomization: PYTHONHASHSEED=17"),
]


@pytest.mark.parametrize(("one", "other"), RUN_TO_RUN)
def test_what_varies_from_run_to_run_is_masked(one: str, other: str) -> None:
    assert fingerprint(one) == fingerprint(other), (normalise(one), normalise(other))


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("FileNotFoundError: /tmp/x/report.json", "FileNotFoundError: /tmp/x/summary.json"),
        ("Connection refused: http://localhost:5432/db", "Connection refused: http://db:5432/db"),
        ("FAILED tests/test_a.py::test_one", "FAILED tests/test_a.py::test_two"),
        ("1 failed in 0.3s", "1 error in 0.3s"),
    ],
)
def test_masking_keeps_what_says_which_error_it_is(one: str, other: str) -> None:
    assert fingerprint(one) != fingerprint(other)
