"""A runaway inside one turn (SPEC §24), the detector alone: the same call in a row, two
calls in alternation, silence — against a plain reference over generated sequences, with
the near-misses (a call's description reworded, its noise changed, one other call between)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.config import StuckConfig
from loopkit.supervisor.runaway import Runaway, call_of

OFF = StuckConfig(same_call=0, ping_pong=0, silent=None)


def bash(command: str, description: str = "a step") -> tuple[str, dict[str, str]]:
    return "Bash", {"command": command, "description": description}


def fired_at(settings: StuckConfig, calls: list[tuple[str, object]]) -> tuple[int, str] | None:
    """The call (1-based) the detector fired at, and which signal."""
    watch = Runaway(settings, 0.0)
    for n, (tool, given_input) in enumerate(calls, 1):
        signal = watch.call(call_of(tool, given_input), float(n))
        if signal is not None:
            return n, signal.trigger
    return None


def reference_same(keys: list[int], limit: int) -> int | None:
    row = 0
    for n, key in enumerate(keys, 1):
        row = row + 1 if n > 1 and key == keys[n - 2] else 1
        if row >= limit:
            return n
    return None


def reference_ping_pong(keys: list[int], cycles: int) -> int | None:
    """The call at which the newest calls alternate between two for ``cycles`` cycles."""
    for n in range(2 * cycles, len(keys) + 1):
        window = keys[n - 2 * cycles : n]
        a, b = window[0], window[1]
        if a != b and all(k == (a if i % 2 == 0 else b) for i, k in enumerate(window)):
            return n
    return None


def test_the_same_call_fires_at_its_threshold_and_not_before() -> None:
    calls = [bash("pytest -x")] * 7
    assert fired_at(StuckConfig(same_call=5, ping_pong=0), calls) == (5, "same_call")
    assert fired_at(StuckConfig(same_call=0, ping_pong=0), calls) is None  # 0: off


def test_what_the_agent_says_of_a_call_is_not_the_call() -> None:
    """A retry reworded is the same call (what runs decides, SPEC §23's binding); the noise
    section 19 masks — a temporary folder's random name, a timestamp — too."""
    calls = [
        bash("pytest -x", "Run the tests"),
        bash("pytest -x", "Run the tests again"),
        bash("pytest -x", "One more time"),
    ]
    assert fired_at(StuckConfig(same_call=3, ping_pong=0), calls) == (3, "same_call")
    noisy = [bash(f"cat /tmp/tmp{name}/out.log") for name in ("a1b2c3d4", "zz99xx00", "q0w9e8r7")]
    assert fired_at(StuckConfig(same_call=3, ping_pong=0), noisy) == (3, "same_call")
    stamped = [bash(f"grep 'at 2026-12-0{d}T10:00:00Z' log") for d in (1, 2, 3)]
    assert fired_at(StuckConfig(same_call=3, ping_pong=0), stamped) == (3, "same_call")


def test_a_different_file_or_word_is_another_call() -> None:
    calls = [
        bash("pytest tests/test_a.py"),
        bash("pytest tests/test_b.py"),
        bash("pytest tests/test_a.py -k one"),
        bash("pytest tests/test_a.py"),
    ]
    assert fired_at(StuckConfig(same_call=2, ping_pong=0), calls) is None
    writes = [("Write", {"file_path": "a.py", "content": f"x = {n}\n"}) for n in range(5)]
    assert fired_at(StuckConfig(same_call=2, ping_pong=0), writes) is None


def test_an_edit_between_two_test_runs_breaks_the_row() -> None:
    calls: list[tuple[str, object]] = []
    for n in range(6):
        calls += [
            bash("pytest -x"),
            ("Edit", {"file_path": "a.py", "old_string": f"{n}", "new_string": f"{n + 1}"}),
        ]
    assert fired_at(StuckConfig(same_call=2, ping_pong=2), calls) is None


def test_two_calls_in_alternation_fire_at_their_cycles() -> None:
    a, b = bash("git status"), bash("git diff")
    assert fired_at(StuckConfig(same_call=0, ping_pong=3), [a, b] * 5) == (6, "ping_pong")
    assert fired_at(StuckConfig(same_call=0, ping_pong=3), [a, b, a, b, a, a, b]) is None
    assert fired_at(StuckConfig(same_call=0, ping_pong=3), [a, b, a, bash("ls"), a, b]) is None
    assert fired_at(StuckConfig(same_call=0, ping_pong=0), [a, b] * 9) is None  # 0: off


COMMANDS = ["pytest -x", "git status", "git diff", "ls", "cat a.py"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, len(COMMANDS) - 1), max_size=40),
    st.integers(2, 6),
    st.lists(st.text(max_size=12), min_size=40, max_size=40),
)
def test_the_same_call_agrees_with_a_plain_count(
    keys: list[int], limit: int, descriptions: list[str]
) -> None:
    calls = [bash(COMMANDS[k], descriptions[n]) for n, k in enumerate(keys)]
    found = fired_at(StuckConfig(same_call=limit, ping_pong=0), calls)
    expected = reference_same(keys, limit)
    assert (found[0] if found else None) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2), max_size=40), st.integers(2, 5))
def test_ping_pong_agrees_with_a_plain_window(keys: list[int], cycles: int) -> None:
    calls = [bash(COMMANDS[k]) for k in keys]
    found = fired_at(StuckConfig(same_call=0, ping_pong=cycles), calls)
    assert (found[0] if found else None) == reference_ping_pong(keys, cycles)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), unique=True, max_size=60))
def test_a_turn_of_distinct_calls_never_fires(commands: list[str]) -> None:
    calls = [bash(f"echo {c!r}") for c in commands]
    assert fired_at(StuckConfig(same_call=2, ping_pong=2), calls) is None


def test_silence_is_timed_on_the_clock_handed_in() -> None:
    watch = Runaway(StuckConfig(silent=600.0), 1000.0)
    assert watch.due() == 1600.0
    running = call_of(*bash("sleep 3600"))
    assert watch.silence(1599.0, running, 1000.0) is None
    watch.heard(1500.0)  # an event: the clock starts again
    assert watch.due() == 2100.0 and watch.silence(2099.9, running, 1000.0) is None
    signal = watch.silence(2100.0, running, 1000.0)
    assert signal is not None and signal.trigger == "silent" and signal.threshold == 600.0
    assert "> Bash: sleep 3600" in signal.attempted
    assert "while Bash: sleep 3600 ran (for 18 min)" in signal.context[0]
    assert watch.due() is None  # once a turn
    assert Runaway(OFF, 0.0).due() is None and Runaway(OFF, 0.0).silence(1e9, None, None) is None


def test_the_evidence_names_the_call_and_what_it_gave_back() -> None:
    watch = Runaway(StuckConfig(same_call=3), 0.0)
    call = call_of(*bash("cat config/settings.yml"))
    signal = None
    for n in range(3):
        signal = watch.call(call, float(n))
        watch.outcome(call, "Exit code 1\ncat: config/settings.yml: No such file", failed=True)
    assert signal is not None
    assert signal.context[0] == "> Bash: cat config/settings.yml"
    assert signal.context[1] == "Each time: ✗ Exit code 1 cat: config/settings.yml: No such file"
    assert signal.attempted == ["the same call 3 times in a row: calls 1–3 of the turn"]


def test_a_secret_in_a_call_never_reaches_the_evidence() -> None:
    def redact(text: str) -> str:
        return text.replace("s3cr3t-token", "[REDACTED]")

    call = call_of("Bash", {"command": "curl -H 'auth: s3cr3t-token' x"}, redact)
    assert "s3cr3t" not in call.shown and "[REDACTED]" in call.shown
