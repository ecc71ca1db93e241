"""With the standard ``OTEL_EXPORTER_OTLP_*`` variables, the audited events go out as
OpenTelemetry log records over OTLP/HTTP (SPEC §30) — from a short command when it exits,
from a hook without ever making the gate wait on the network."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakecollector import FakeCollector

from loopkit.audit.chain import Trail

from helpers import clean_env, loopkit, wait_until, write_config

SUPERVISED = {"LOOPKIT_AGENT_SESSION": "test-session"}


@pytest.fixture
def collector() -> Iterator[FakeCollector]:
    fake = FakeCollector().start()
    try:
        yield fake
    finally:
        fake.close()


def otel(collector: FakeCollector, **extra: str) -> dict[str, str]:
    return clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint, OTEL_SERVICE_NAME="", **extra)


def test_a_short_commands_audited_events_reach_the_collector_when_it_exits(
    ws: Path, collector: FakeCollector
) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    asked = loopkit("-C", str(ws), "ask", "--json", "-p", "x", "-s", "Name it?", "-q",
                    "Rename the helper?", env=otel(collector))  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    request_id = json.loads(asked.stdout)["request_id"]
    done = loopkit("-C", str(ws), "reply", "--request-id", request_id, "--reply", "A",
                   "--by", "ana", env=otel(collector))  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the command flushed before it exited: the records are there now
    records = collector.records()
    assert collector.refused == []
    names = [r["event_name"] for r in records]
    assert names == ["loopkit.asked", "loopkit.answer"], names
    answer = records[1]
    assert answer["service"] == "loopkit" and answer["severity"] == 9  # INFO
    assert answer["attributes"]["loopkit.by"] == "ana"
    assert answer["attributes"]["loopkit.request_id"] == request_id
    # the record is the audit line: its seq and SHA-256 match the local chain
    lines = Trail(ws / ".loopkit").path.read_bytes().splitlines()
    from loopkit.audit.chain import digest

    assert answer["attributes"]["loopkit.audit.seq"] == 2
    assert answer["attributes"]["loopkit.audit.sha256"] == digest(lines[1])


def test_a_gate_decision_never_waits_on_the_collector(ws: Path, collector: FakeCollector) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    collector.hold.clear()  # the collector takes the request and does not answer
    call = {"session_id": "s", "cwd": str(ws), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}  # fmt: skip
    done = loopkit("hook", "claude", "pretooluse", input=json.dumps(call), cwd=ws,
                   env=otel(collector, **SUPERVISED))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # The hook has exited with its decision; its records are still on their way, sent by
    # a process of their own that waits on the collector.
    wait_until(collector.received.is_set, timeout=20, what="the export, held at the collector")
    assert collector.requests == []
    collector.hold.set()
    wait_until(lambda: collector.records(), timeout=20, what="the hook's records")
    names = {r["event_name"] for r in collector.records()}
    assert {"loopkit.escalated", "loopkit.gate_decision"} <= names


def test_without_the_variables_nothing_is_sent(ws: Path, collector: FakeCollector) -> None:
    write_config(ws, '[escalation]\nchannel = "none"\n')
    done = loopkit("-C", str(ws), "ask", "-p", "x", "-s", "Name it?", "-q", "Rename it?")
    assert done.returncode == 0
    assert not collector.received.is_set()
    assert (ws / ".loopkit" / "audit.jsonl").exists()
