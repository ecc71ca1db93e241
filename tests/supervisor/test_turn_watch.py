"""The turn watched as it runs (SPEC §24), in process: the three agents' events read into
``live.json`` (written at once, then coalesced), a runaway stopped the agent's own way, then
with SIGINT, then by the group, silence timed on a fake clock, a message into a Claude turn
— or, once its turn is over, a note — and events however their bytes arrive."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeInput
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.config import StuckConfig
from loopkit.supervisor.agentstreams import CodexStream, GeminiStream, agent_of, stream_for
from loopkit.supervisor.claudestream import ClaudeStream
from loopkit.supervisor.mailbox import Mailbox
from loopkit.supervisor.turnwatch import LIVE_EVERY, LiveRecord, TurnWatch
from loopkit.watch.wake import Wake
from loopkit.workspace import Workspace, live
from loopkit.workspace.steer import Says


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def tool_use(n: int, command: str = "pytest -x") -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": f"m{n}",
            "usage": {"input_tokens": 10, "output_tokens": 2},
            "content": [
                {
                    "type": "tool_use",
                    "id": f"t{n}",
                    "name": "Bash",
                    "input": {"command": command, "description": f"try {n}"},
                }
            ],
        },
    }


def tool_result(n: int, text: str = "1 failed", error: bool = True) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": f"t{n}", "content": text, "is_error": error}
            ]
        },
    }


RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "num_turns": 3,
    "session_id": "s-1",
    "total_cost_usd": 0.25,
}
INIT = {"type": "system", "subtype": "init", "session_id": "s-1", "permissionMode": "default"}


def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / ".loopkit").mkdir(exist_ok=True)
    return Workspace(tmp_path, tmp_path / "BLOCKED.md")


class Opened:
    """A watch opened as the runner opens it: its stdin, what it says, the signals sent."""

    def __init__(self, watch: TurnWatch, *, stdin: bool = True) -> None:
        self.watch = watch
        self.stdin = FakeInput() if stdin else None
        self.said: list[bytes] = []
        self.signals: list[int] = []
        watch.opened(self.stdin, self.said.append, self.signals.append)  # type: ignore[arg-type]

    def feed(self, *events: dict[str, Any]) -> None:
        self.watch.received(lines(*events))

    def written(self) -> list[dict[str, Any]]:
        assert self.stdin is not None
        return [json.loads(line) for line in bytes(self.stdin.written).splitlines()]

    def text(self) -> str:
        return b"".join(self.said).decode()


def test_a_call_is_in_live_json_at_once_and_a_burst_is_written_coalesced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, clock = workspace(tmp_path), Clock()
    writes: list[dict[str, Any]] = []
    real = live.write
    monkeypatch.setattr(live, "write", lambda w, d: (writes.append(dict(d)), real(w, d)))
    record = LiveRecord(ws, {"pid": 4242, "iteration": 7, "agent": "claude"}, clock)
    watch = ClaudeStream("go", settings=StuckConfig(), now=clock, live_record=record)
    turn = Opened(watch)
    assert len(writes) == 1  # the turn's start, at once
    clock.now += 1.0
    turn.feed(INIT, tool_use(1, "npm test -- --watch=false"))
    assert len(writes) == 1  # not yet: the watch's next tick writes what the read held
    watch.tick()
    assert len(writes) == 2 and writes[-1]["tool"]["input"]["command"] == (
        "npm test -- --watch=false"
    )
    for n in range(500):  # a burst of events with no time passing: none written
        turn.feed(
            {
                "type": "assistant",
                "message": {"id": "m9", "content": [{"type": "text", "text": f"line {n}"}]},
            }
        )
        watch.tick()
    assert len(writes) == 2
    due = watch.due()
    assert due is not None and due == pytest.approx(clock.now + LIVE_EVERY)
    clock.now = due
    watch.tick()
    assert len(writes) == 3 and writes[-1]["text"] == "line 499"
    shown = live.read(ws, 4242)
    assert shown is not None and shown["text"] == "line 499" and shown["calls"] == 1
    assert shown["tool"]["name"] == "Bash" and shown["turns"] == 2
    assert shown["tokens"] == {"input": 10, "output": 2} and shown["takes_messages"]
    assert live.read(ws, 4243) is None  # another supervisor's: not this turn
    turn.feed(tool_result(1, "ok", error=False), RESULT)
    watch.closed()
    assert live.read(ws, 4242) is None  # the turn ended
    data = json.loads(live.path_of(ws).read_text())
    assert data["ended_at"] and data["spend_usd"] == 0.25 and data["tool"] is None


def test_a_runaway_in_claude_is_stopped_its_own_way_then_with_sigint_then_by_the_group() -> None:
    clock = Clock()
    watch = ClaudeStream("go", settings=StuckConfig(same_call=3), now=clock, grace=5.0)
    turn = Opened(watch)
    turn.feed(INIT)
    for n in range(1, 4):
        turn.feed(tool_use(n), tool_result(n))
    assert watch.runaway is not None and watch.runaway.trigger == "same_call"
    (interrupt,) = [m for m in turn.written() if m["type"] == "control_request"]
    assert interrupt["request"] == {"subtype": "interrupt"}
    assert watch.stopped_by == "Claude Code's own interrupt" and not turn.signals
    turn.feed(tool_use(4))  # one call may have been on its way: allowed
    assert not turn.signals
    turn.feed(tool_use(5))  # a second: the interrupt did not take
    assert turn.signals == [signal.SIGINT] and not watch.ending
    clock.now += 5.0  # SIGINT's grace passes
    watch.tick()
    assert watch.ending and "process group" in (watch.stopped_by or "")
    assert "stopping the turn ([stuck] same_call)" in turn.text()


def test_an_agent_without_an_interrupt_of_its_own_gets_sigint_at_once() -> None:
    clock = Clock()
    watch = CodexStream(StuckConfig(same_call=2), now=clock, grace=5.0)
    turn = Opened(watch, stdin=False)
    for n in range(2):
        turn.feed(
            {
                "type": "item.started",
                "item": {
                    "id": f"i{n}",
                    "type": "command_execution",
                    "command": "/bin/bash -lc 'cat x'",
                    "status": "in_progress",
                },
            }
        )
    assert turn.signals == [signal.SIGINT] and watch.stopped_by.startswith("SIGINT")  # type: ignore[union-attr]
    turn.feed(
        {
            "type": "item.started",
            "item": {"id": "i9", "type": "command_execution", "command": "/bin/bash -lc 'cat x'"},
        }
    )
    assert watch.ending  # calling on after SIGINT: the group is stopped


def test_silence_is_stopped_on_the_clock_handed_in() -> None:
    clock = Clock()
    watch = GeminiStream(StuckConfig(silent=600.0), now=clock)
    turn = Opened(watch, stdin=False)
    turn.feed(
        {
            "type": "tool_use",
            "tool_name": "run_shell_command",
            "tool_id": "x1",
            "parameters": {"command": "sleep 3600"},
        }
    )
    assert watch.due() == pytest.approx(clock.now + 600.0)
    clock.now += 599.0
    watch.tick()
    assert watch.runaway is None
    watch.output()  # stderr: a sign of life
    clock.now += 599.0
    watch.tick()
    assert watch.runaway is None
    clock.now += 1.0
    watch.tick()
    assert watch.runaway is not None and watch.runaway.trigger == "silent"
    assert watch.runaway.attempted == ["> run_shell_command: sleep 3600"]
    assert turn.signals == [signal.SIGINT]


def test_a_message_goes_into_a_claude_turn_and_after_its_result_is_a_note(
    tmp_path: Path,
) -> None:
    ws, wake = workspace(tmp_path), Wake()
    mailbox = Mailbox(ws, wake)
    says = Says(ws)
    watch = ClaudeStream("go", settings=StuckConfig(), mailbox=mailbox, iteration=3)
    turn = Opened(watch)
    turn.feed(INIT)
    name = says.give("use the staging database", by="ana", via="cli")
    ((taken, note),) = says.take()
    mailbox.post(taken, note)
    assert wake.is_set()  # the runner wakes up and ticks
    watch.tick()
    user = [m for m in turn.written() if m["type"] == "user"]
    assert (
        user[-1]["message"]["content"] == "[loopkit] ana (via cli) says: use the staging database"
    )
    assert user[-1]["session_id"] == "s-1"
    said = says.outcome(name)
    assert said is not None and said.line("shop") == (
        "shop: delivered into the running turn (claude, session s-1, iteration 3)"
    )
    assert "← ana via cli: use the staging database" in turn.text()

    turn.feed(RESULT)  # the turn is over: the next message waits for the next run
    later = says.give("and the invoices table", by="ana", via="telegram")
    ((taken, note),) = says.take()
    mailbox.post(taken, note)
    said = says.outcome(later)
    assert said is not None and said.outcome == "guidance" and said.why == "no agent turn runs now"
    notes = list((ws.state_dir / "control" / "notes").iterdir())
    assert [json.loads(p.read_text())["text"] for p in notes] == ["and the invoices table"]


def test_a_message_waiting_when_the_turn_ends_becomes_a_note(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    mailbox, says = Mailbox(ws, Wake()), Says(ws)
    watch = ClaudeStream("go", settings=StuckConfig(), mailbox=mailbox)
    Opened(watch)
    name = says.give("too late", by="ana", via="cli")
    mailbox.post(*says.take()[0])
    watch.closed()  # ended before its next wake-up: handed back, never lost
    said = says.outcome(name)
    assert said is not None and said.outcome == "guidance"


def test_which_commands_are_watched_and_as_which_agent() -> None:
    assert agent_of("claude -p --input-format stream-json --output-format stream-json") == "claude"
    assert agent_of("claude -p go --output-format stream-json --verbose") == "claude"
    assert agent_of("codex exec --json --sandbox workspace-write 'do it'") == "codex"
    assert agent_of(("npx", "@google/gemini-cli", "-o", "stream-json", "-p", "x")) == "gemini"
    assert agent_of("gemini --output-format=stream-json -p x") == "gemini"
    assert agent_of("codex exec 'do it'") is None  # its output is text
    assert agent_of("gemini -p 'stream-json please'") is None
    assert agent_of("./my-agent.sh --json") is None  # not a dialect loopkit knows
    assert agent_of(None) is None
    made = stream_for(
        "claude -p go --output-format stream-json --verbose",
        prompt=None,
        dialogs=None,
        settings=StuckConfig(),
    )
    assert isinstance(made, ClaudeStream) and not made.writes


# -- events however their bytes arrive ----------------------------------------------------------

CLAUDE_TURN = [
    INIT,
    tool_use(1, "ls"),
    tool_result(1, "a\nb", error=False),
    {
        "type": "assistant",
        "message": {"id": "m2", "content": [{"type": "text", "text": "Now the tests."}]},
    },
    tool_use(3, "pytest -q"),
    RESULT,
]
CODEX_TURN = [
    {"type": "thread.started", "thread_id": "th-1"},
    {"type": "turn.started"},
    {
        "type": "item.started",
        "item": {
            "id": "i1",
            "type": "command_execution",
            "command": "bash -lc ls",
            "status": "in_progress",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "i1",
            "type": "command_execution",
            "command": "bash -lc ls",
            "aggregated_output": "a\n",
            "exit_code": 0,
            "status": "completed",
        },
    },
    {
        "type": "item.completed",
        "item": {
            "id": "i2",
            "type": "file_change",
            "status": "completed",
            "changes": [{"path": "a.py", "kind": "update"}],
        },
    },
    {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "Done."}},
    {"type": "turn.completed", "usage": {"input_tokens": 300, "output_tokens": 60}},
]
GEMINI_TURN = [
    {"type": "init", "session_id": "g-1", "model": "auto"},
    {"type": "message", "role": "user", "content": "do it"},
    {
        "type": "tool_use",
        "tool_name": "run_shell_command",
        "tool_id": "x1",
        "parameters": {"command": "ls", "description": "list"},
    },
    {"type": "tool_result", "tool_id": "x1", "status": "success", "output": "a"},
    {"type": "message", "role": "assistant", "content": "Do", "delta": True},
    {"type": "message", "role": "assistant", "content": "ne.", "delta": True},
    {"type": "result", "status": "success", "stats": {"input_tokens": 40, "output_tokens": 8}},
]
TURNS: list[tuple[type[TurnWatch], list[dict[str, Any]], dict[str, Any]]] = [
    (
        ClaudeStream,
        CLAUDE_TURN,
        {"session_id": "s-1", "calls": 2, "text": "Now the tests.", "spend_usd": 0.25},
    ),
    (
        CodexStream,
        CODEX_TURN,
        {"session_id": "th-1", "calls": 2, "text": "Done.", "tokens": {"input": 300, "output": 60}},
    ),
    (
        GeminiStream,
        GEMINI_TURN,
        {"session_id": "g-1", "calls": 1, "text": "Done.", "tokens": {"input": 40, "output": 8}},
    ),
]


def watched(kind: type[TurnWatch], chunks: list[bytes], tmp: Path) -> dict[str, Any]:
    ws = workspace(tmp)
    clock = Clock()
    record = LiveRecord(ws, {"pid": 1}, clock)
    watch: TurnWatch = (
        kind("go", settings=StuckConfig(), now=clock, live_record=record)  # type: ignore[call-arg]
        if kind is ClaudeStream
        else kind(StuckConfig(), now=clock, live_record=record)
    )
    turn = Opened(watch, stdin=kind is ClaudeStream)
    for chunk in chunks:
        watch.received(chunk)
    watch.closed()
    return {**record.data, "said": turn.text()}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(TURNS))), st.lists(st.integers(1, 400), max_size=12))
def test_a_turn_reads_the_same_however_its_bytes_are_split(
    tmp_path_factory: pytest.TempPathFactory, which: int, cuts: list[int]
) -> None:
    kind, events, expected = TURNS[which]
    whole = lines(*events)
    points = sorted({min(c, len(whole)) for c in cuts})
    chunks = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)]
    seen = watched(kind, [c for c in chunks if c], tmp_path_factory.mktemp("t"))
    for key, value in expected.items():
        assert seen[key] == value, key
    once = watched(kind, [whole], tmp_path_factory.mktemp("w"))
    stamps = ("started_at", "event_at", "text_at", "ended_at", "since")
    assert _unstamped(seen, stamps) == _unstamped(once, stamps)
    assert '"type"' not in seen["said"]  # the turn as text, never raw events


def _unstamped(data: Any, stamps: tuple[str, ...]) -> Any:
    if isinstance(data, dict):
        return {k: _unstamped(v, stamps) for k, v in data.items() if k not in stamps}
    return data


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
SHAPES = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "assistant",
                "user",
                "result",
                "system",
                "item.started",
                "item.completed",
                "tool_use",
                "tool_result",
                "message",
                "init",
                "turn.completed",
                "error",
                "control_request",
            ]
        )
    },
    optional={
        "message": JSON,
        "item": JSON,
        "tool_id": JSON,
        "parameters": JSON,
        "content": JSON,
        "usage": JSON,
        "stats": JSON,
        "role": JSON,
        "subtype": JSON,
        "session_id": JSON,
        "thread_id": JSON,
        "tool_name": JSON,
    },
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([ClaudeStream, CodexStream, GeminiStream]), st.lists(SHAPES, max_size=8))
def test_events_of_any_shape_never_break_the_watch(
    kind: type[TurnWatch], events: list[dict[str, Any]]
) -> None:
    clock = Clock()
    watch: TurnWatch = (
        ClaudeStream("go", settings=StuckConfig(same_call=2), now=clock)
        if kind is ClaudeStream
        else kind(StuckConfig(same_call=2), now=clock)
    )
    turn = Opened(watch, stdin=kind is ClaudeStream)
    turn.feed(*events)
    clock.now += 1e6
    watch.tick()
    watch.closed()
