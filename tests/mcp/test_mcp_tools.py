"""``loopkit mcp`` through the SDK's own stdio client: the installed ``loopkit mcp`` spawned in a
temporary workspace, every tool called as an MCP client calls it. (A wait's progress
notifications are tested in process: ``test_mcp_wait_inprocess.py``.)"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from helpers import LOOPKIT, clean_env, files, lk, record

TOOLS = [
    "request_human_input",
    "request_human_review",
    "list_human_requests",
    "get_human_request",
    "wait_for_human",
    "escalate",
]
INPUT = {"situation": "Which checkout flow should the new page use?", "policy": "Ask on UX."}
REVIEW = {
    "requestKey": "mobile-menu-review-1",
    "title": "Check the mobile menu",
    "reason": "Automated checks passed; one-handed comfort needs a real-device check",
    "checkTarget": "Open the menu on your phone, close it, try its links",
    "completionCriteria": "Reply with no changes, or the element to change and why",
}


class Client:
    """A client session on ``loopkit mcp`` (its stderr kept in a file)."""

    def __init__(self, session: ClientSession, stderr: Path) -> None:
        self.session = session
        self.stderr = stderr

    async def call(self, tool: str, arguments: dict[str, Any], **kw: Any) -> CallToolResult:
        return await self.session.call_tool(tool, arguments, **kw)

    async def ok(self, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
        """The structured result of a call that must succeed."""
        result = await self.call(tool, arguments, **kw)
        assert not result.is_error, f"{tool}: {text(result)}; stderr: {self.stderr.read_text()}"
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def refused(self, tool: str, arguments: dict[str, Any]) -> str:
        """The one-line message of a call that must be a tool error."""
        result = await self.call(tool, arguments)
        assert result.is_error, f"{tool} was not refused: {result.structured_content}"
        message = text(result)
        assert message and "\n" not in message, message
        return message


def text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@contextlib.asynccontextmanager
async def connect(ws: Path, *args: str, **env: str) -> AsyncIterator[Client]:
    stderr = ws.parent / "mcp.err"
    params = StdioServerParameters(
        command=str(LOOPKIT), args=[*args, "mcp"], cwd=str(ws), env=clean_env(**env)
    )
    with stderr.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield Client(session, stderr)


def serve(ws: Path, scenario: Callable[[Client], Awaitable[None]], **env: str) -> None:
    async def main() -> None:
        with anyio.fail_after(45):
            async with connect(ws, **env) as client:
                await scenario(client)

    anyio.run(main)


def test_tools_list_names_each_with_an_input_and_an_output_schema(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        listed = (await client.session.list_tools()).tools
        assert [tool.name for tool in listed] == TOOLS
        for tool in listed:
            assert tool.description, tool.name
            assert tool.input_schema["type"] == "object", tool.name
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        schemas = {tool.name: tool.input_schema for tool in listed}
        review = schemas["request_human_review"]
        assert set(review["required"]) == {"title", "reason", "request_key"}
        assert review["properties"]["dry_run"]["default"] is True
        assert schemas["wait_for_human"]["properties"]["wait_seconds"]["maximum"] == 50
        statuses = schemas["list_human_requests"]["properties"]["status"]
        assert statuses["enum"] == ["open", "deferred", "resolved", "expired", "dismissed", "all"]
        assert statuses["default"] == "open"

    serve(ws, scenario)


def test_request_human_input_asks_and_a_rubric_violation_is_a_tool_error(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        routine = {"situation": "Rename a local helper", "policy": "", "confidence": 0.95}
        proceed = await client.ok("request_human_input", routine)
        assert proceed["needs_human"] is False and proceed["request"] is None
        assert proceed["request_id"] is None and not (ws / "requests").exists()

        options = ["One", "Two", "Three", "Four"]
        message = await client.refused("request_human_input", {**INPUT, "options": options})
        assert "rubric" in message and "option-count" in message
        assert not (ws / "requests").exists()  # a refusal writes nothing

        asked = await client.ok(
            "request_human_input",
            {**INPUT, "options": ["Old flow=old", "New flow=new"], "recommendation": "new"},
        )
        assert asked["needs_human"] is True and asked["dry_run"] is False
        request_id = asked["request_id"]
        assert asked["request"] == record(ws, request_id)  # the record, as the file has it
        assert asked["request"]["options"] == [
            {"label": "Old flow", "value": "old"},
            {"label": "New flow", "value": "new"},
        ]
        assert not (ws / "BLOCKED.md").exists()  # no block unless asked for

        again = await client.ok("request_human_input", {**INPUT, "request_key": "flow"})
        same = await client.ok("request_human_input", {**INPUT, "request_key": "flow"})
        assert same["existing"] is True and same["request_id"] == again["request_id"]
        assert len(files(ws)) == 2

    serve(ws, scenario)


def test_request_human_input_with_block_raises_the_block(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        asked = await client.ok("request_human_input", {**INPUT, "block": True})
        assert (ws / "BLOCKED.md").exists()
        assert f"<!-- loopkit request: {asked['request_id']} -->" in (ws / "BLOCKED.md").read_text()

    serve(ws, scenario)
    assert lk(ws, "check").returncode == 2


def test_dry_runs_preview_and_write_nothing(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        preview = await client.ok("request_human_review", REVIEW)  # dryRun defaults to true
        assert preview["dry_run"] is True and preview["request_id"] is None
        shown = preview["request"]
        assert shown["kind"] == "review" and shown["prompt"] == "Check the mobile menu"
        assert shown["review"]["check_target"] == REVIEW["checkTarget"]
        assert shown["review"]["completion_criteria"] == [REVIEW["completionCriteria"]]
        assert [o["label"] for o in shown["options"]] == ["Approve", "Request changes", "Defer"]

        asked = await client.ok("request_human_input", {**INPUT, "dry_run": True, "block": True})
        assert asked["dry_run"] is True and asked["request"]["prompt"] == INPUT["situation"]
        assert sorted(ws.iterdir()) == []  # no requests/, no BLOCKED.md, no .loopkit/

        message = await client.refused(
            "request_human_review", {**REVIEW, "artifactUrl": "http://example.com/menu"}
        )
        assert "https" in message  # checked on a dry run too (the refusal is logged)

    serve(ws, scenario)
    assert not (ws / "requests").exists()


def test_review_takes_camel_case_and_its_key_is_idempotent(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        url = "https://example.com/build/42"
        saved = await client.ok(
            "request_human_review", {**REVIEW, "dryRun": False, "artifactUrl": url}
        )
        assert saved["dry_run"] is False and saved["existing"] is False
        request_id = saved["request_id"]
        on_disk = record(ws, request_id)
        assert on_disk["request_key"] == REVIEW["requestKey"] and on_disk["kind"] == "review"
        assert on_disk["review"]["artifact_url"] == url  # type: ignore[index]

        snake = {
            "request_key": REVIEW["requestKey"], "title": REVIEW["title"],
            "reason": REVIEW["reason"], "dry_run": False,
        }  # fmt: skip
        for again in ({**REVIEW, "dryRun": False}, snake, REVIEW):
            same = await client.ok("request_human_review", again)
            assert same["existing"] is True and same["request_id"] == request_id
        assert len(files(ws)) == 1

        current = {**snake, "expected_updated_at": on_disk["updated_at"]}
        assert (await client.ok("request_human_review", current))["request_id"] == request_id
        stale = {**REVIEW, "dryRun": False, "expectedUpdatedAt": "2020-01-01T00:00:00Z"}
        message = await client.refused("request_human_review", stale)
        assert "changed since" in message and request_id in message

        # Answered: the same key returns the answered record (a new round takes a new key).
        assert lk(ws, "reply", "--request-id", request_id, "--reply", "approve").returncode == 0
        answered = await client.ok("request_human_review", {**REVIEW, "dryRun": False})
        assert answered["request_id"] == request_id
        assert answered["request"]["resolution"]["outcome"] == "approved"
        assert len(files(ws)) == 1

    serve(ws, scenario)


def test_bad_input_is_a_tool_error_and_the_server_keeps_answering(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        bad = [
            ("list_human_requests", {"status": "pending"}, "status"),
            ("get_human_request", {"request_id": "nope"}, "no request 'nope'"),
            ("get_human_request", {"request_id": "../x"}, "not allowed"),
            ("wait_for_human", {"request_id": "nope", "wait_seconds": 1}, "no request"),
            ("wait_for_human", {"request_id": "x", "wait_seconds": 51}, "wait_seconds"),
            ("request_human_input", {"situation": "x"}, "policy"),
            ("request_human_input", {**INPUT, "confidence": 2}, "confidence"),
            ("request_human_input", {**INPUT, "prompt": "Why? And how?"}, "one-question"),
            ("request_human_review", {"title": "t", "reason": "r"}, "request_key"),
            ("escalate", {"question": "Q?", "context": "c", "attempted": [], "choices": ["A"]},
             "attempted"),
            ("no_such_tool", {}, "no_such_tool"),
        ]  # fmt: skip
        for tool, arguments, expected in bad:
            message = await client.refused(tool, arguments)
            assert expected in message, (tool, message)
            listed = await client.ok("list_human_requests", {})
            assert listed == {"requests": [], "problems": []}

    serve(ws, scenario)
    assert not (ws / "requests").exists()


def test_list_and_get_read_the_records(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        question = await client.ok("request_human_input", {**INPUT, "request_key": "q1"})
        review = await client.ok("request_human_review", {**REVIEW, "dryRun": False})
        q_id, r_id = question["request_id"], review["request_id"]

        listed = await client.ok("list_human_requests", {})
        assert {row["request_id"] for row in listed["requests"]} == {q_id, r_id}
        assert {row["outcome"] for row in listed["requests"]} == {"open"}
        only = await client.ok("list_human_requests", {"kind": "review"})
        assert [row["request_id"] for row in only["requests"]] == [r_id]
        keyed = await client.ok("list_human_requests", {"request_key": "q1", "status": "all"})
        assert [row["request_id"] for row in keyed["requests"]] == [q_id]

        assert lk(ws, "reply", "--request-id", q_id, "--reply", "B").returncode == 0
        still_open = await client.ok("list_human_requests", {"status": "open"})
        assert [row["request_id"] for row in still_open["requests"]] == [r_id]
        resolved = await client.ok("list_human_requests", {"status": "resolved"})
        [row] = resolved["requests"]
        assert row["request_id"] == q_id and row["outcome"] == "chosen"
        every = await client.ok("list_human_requests", {"status": "all"})
        assert len(every["requests"]) == 2

        (ws / "requests" / "broken.json").write_text("{")
        listed = await client.ok("list_human_requests", {"status": "all"})
        assert len(listed["requests"]) == 2 and "broken.json" in listed["problems"][0]

        got = await client.ok("get_human_request", {"request_id": q_id})
        assert got == record(ws, q_id)
        assert got["status"] == "resolved" and got["resolution"]["chosen_option"] == "skip"

    serve(ws, scenario)


def test_a_dismissed_request_reads_as_dismissed_never_as_an_answer(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        asked = await client.ok("request_human_input", {**INPUT, "kind": "approval"})
        rid = asked["request_id"]
        assert lk(ws, "dismiss", rid, "--reason", "asked twice").returncode == 0
        listed = await client.ok("list_human_requests", {"status": "dismissed"})
        [row] = listed["requests"]
        assert (row["request_id"], row["status"], row["outcome"]) == (rid, "dismissed", "dismissed")
        assert (await client.ok("list_human_requests", {}))["requests"] == []
        got = await client.ok("get_human_request", {"request_id": rid})
        assert got == record(ws, rid) and got["status"] == "dismissed"
        assert got["resolution"]["outcome"] == "dismissed"
        waited = await client.ok("wait_for_human", {"request_id": rid, "wait_seconds": 1})
        assert waited == {
            "request_id": rid, "status": "dismissed", "outcome": "dismissed",
            "parsed_decision": "dismissed", "reason": "asked twice",
        }  # fmt: skip

    serve(ws, scenario)


def test_wait_returns_open_when_the_time_is_up(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        asked = await client.ok("request_human_input", INPUT)
        started = time.monotonic()
        waited = await client.ok(
            "wait_for_human", {"request_id": asked["request_id"], "wait_seconds": 1}
        )
        assert 1 <= time.monotonic() - started < 10
        assert waited == {
            "request_id": asked["request_id"], "status": "open", "outcome": "open",
            "parsed_decision": None, "reason": None,
        }  # fmt: skip
        assert record(ws, asked["request_id"])["status"] == "open"  # nothing was answered

    serve(ws, scenario)


def test_escalate_blocks_and_a_second_joins(ws: Path) -> None:
    async def scenario(client: Client) -> None:
        arguments = {
            "question": "Which flow?", "context": "checkout page, src/checkout.py",
            "attempted": ["read PROMPT.md: it names both"],
            "choices": ["Flow A — old API", "Flow B — migration"],
        }  # fmt: skip
        blocked = await client.ok("escalate", arguments)
        assert blocked["blocked"] is True and blocked["joined"] is None
        assert blocked["request"] == record(ws, blocked["request_id"])
        assert [o["label"] for o in blocked["request"]["options"]] == ["Flow A", "Flow B"]
        text = (ws / "BLOCKED.md").read_text()
        assert f"<!-- loopkit request: {blocked['request_id']} -->" in text

        joined = await client.ok("escalate", {**arguments, "question": "And the tests?"})
        assert joined["blocked"] is True and joined["joined"] == blocked["request_id"]
        assert (ws / "BLOCKED.md").read_text() == text

        four = {**arguments, "choices": ["A", "B", "C", "D"]}
        assert "choices" in await client.refused("escalate", four)

    serve(ws, scenario)
    assert lk(ws, "check").returncode == 2


def test_a_broken_loopkit_toml_refuses_the_tools_but_escalate_still_blocks(ws: Path) -> None:
    (ws / "loopkit.toml").write_text("[escalation]\ntimeout_minutes = 'soon'\n")

    async def scenario(client: Client) -> None:
        message = await client.refused("request_human_input", INPUT)
        assert "timeout_minutes" in message and "loopkit.toml" in message
        blocked = await client.ok("escalate", {
            "question": "Which flow?", "context": "checkout", "attempted": ["read the spec"],
            "choices": ["A — one", "B — two"],
        })  # fmt: skip
        assert blocked["blocked"] is True and "timeout_minutes" in blocked["warning"]

    serve(ws, scenario)
    assert (ws / "BLOCKED.md").exists()


def test_the_workspace_is_found_from_a_subfolder(ws: Path) -> None:
    (ws / "loopkit.toml").write_text("")
    sub = ws / "src" / "deep"
    sub.mkdir(parents=True)

    async def scenario(client: Client) -> None:
        await client.ok("escalate", {
            "question": "Which flow?", "context": "c", "attempted": ["a"], "choices": ["A — x"],
        })  # fmt: skip

    serve(sub, scenario)
    assert (ws / "BLOCKED.md").exists() and not (sub / "BLOCKED.md").exists()
    assert len(files(ws)) == 1


@pytest.mark.parametrize("explicit", [True, False])
def test_minus_c_names_the_workspace(ws: Path, tmp_path: Path, explicit: bool) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    async def main() -> None:
        args = ("-C", str(ws)) if explicit else ()
        env = {} if explicit else {"LOOPKIT_WORKSPACE": str(ws)}
        with anyio.fail_after(30):
            async with connect(elsewhere, *args, **env) as client:
                await client.ok("request_human_input", INPUT)

    anyio.run(main)
    assert len(files(ws)) == 1 and not (elsewhere / "requests").exists()


def test_the_schemas_kinds_statuses_and_timeout_actions_are_loopkits() -> None:
    from typing import get_args

    from loopkit.config.values import TIMEOUT_ACTIONS
    from loopkit.mcp_server import models
    from loopkit.requests.record import KINDS, STATUSES

    assert get_args(models.Kind) == KINDS and get_args(models.Status) == STATUSES
    assert get_args(models.TimeoutAction) == TIMEOUT_ACTIONS
