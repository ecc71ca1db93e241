"""The tools that read: ``list_human_requests``, ``get_human_request``, ``wait_for_human``.

The list is :func:`loopkit.requests.table.listing` (``loopkit requests --json``), the read
is the store's (``requests show``, a request in another registered workspace found too), the
wait is :func:`loopkit.requests.outcome.wait_for` (``requests wait``). The wait never
guesses: when its time is up before anyone answered, it says ``open``.
"""

from __future__ import annotations

import functools
import threading
from typing import Annotated, cast

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context
from pydantic import Field

from loopkit.mcp_server.models import (
    HumanRequest,
    Kind,
    Listed,
    Outcome,
    RequestRow,
    StatusFilter,
    Waited,
)
from loopkit.mcp_server.workspace import ServedWorkspace
from loopkit.requests.answer import outcome_of
from loopkit.requests.models import Resolution
from loopkit.requests.outcome import wait_for
from loopkit.requests.record import Request
from loopkit.requests.table import listing

MAX_WAIT = 50.0  # seconds: below the idle timeouts of MCP clients (SPEC section 12)
PROGRESS_EVERY = 10.0  # seconds between progress notifications while a wait runs


def waited(record: Request) -> Waited:
    """``loopkit requests wait``'s object for ``record``."""
    res = record.resolution or Resolution()
    return Waited(
        request_id=record.request_id,
        status=record.status.value,
        outcome=cast(Outcome, outcome_of(record)),
        parsed_decision=res.parsed_decision,
        reason=res.reason,
    )


class ReadingTools:
    """``list_human_requests``, ``get_human_request``, ``wait_for_human`` for one workspace."""

    def __init__(self, served: ServedWorkspace, *, progress_every: float = PROGRESS_EVERY) -> None:
        self.served = served
        self.progress_every = progress_every

    def list_human_requests(
        self,
        status: Annotated[
            StatusFilter,
            Field(description="open (the default), deferred, resolved, expired, dismissed, all."),
        ] = "open",
        kind: Annotated[Kind | None, Field(description="question, approval or review.")] = None,
        request_key: Annotated[
            str | None, Field(description="Only requests with this key.")
        ] = None,
    ) -> Listed:
        """List requests, oldest first (`loopkit requests --json`).

        A request leaving the open list is not an answer: read each one's status and outcome
        here, or the whole record with get_human_request.
        """
        self.served.config()
        rows, problems = listing(
            self.served.store(), status=None if status == "all" else status, kind=kind
        )
        wanted = [row for row in rows if request_key is None or row["request_key"] == request_key]
        return Listed(requests=[RequestRow(**row) for row in wanted], problems=problems)

    def get_human_request(
        self, request_id: Annotated[str, Field(description="The request's id.")]
    ) -> HumanRequest:
        """The whole record of one request (`loopkit requests show`): the one true read of
        its status, resolution and outcome."""
        self.served.config()
        record = self.served.app.store_holding(request_id).load(request_id)
        return HumanRequest.model_validate(record.to_dict())

    async def wait_for_human(
        self,
        request_id: Annotated[str, Field(description="The request to wait on.")],
        ctx: Context,
        wait_seconds: Annotated[
            float, Field(ge=0, le=MAX_WAIT, description="How long to wait, at most 50 seconds.")
        ] = MAX_WAIT,
    ) -> Waited:
        """Wait up to wait_seconds (default and at most 50) for a human's answer
        (`loopkit requests wait`).

        Returns the outcome as soon as the request is answered — from the phone, the inbox
        or a terminal. When the time is up first it returns status open (outcome open): no
        answer yet, never a guess; call it again to keep waiting. Sends a progress
        notification every 10 s while it waits.
        """
        self.served.config()
        store = self.served.store()
        stop = threading.Event()
        wait = functools.partial(wait_for, store, request_id, timeout=wait_seconds, stop=stop)
        found: list[Request] = []
        failed: list[BaseException] = []

        async def run() -> None:
            try:
                found.append(await anyio.to_thread.run_sync(wait, abandon_on_cancel=True))
            except Exception as exc:  # raised below, outside the task group
                failed.append(exc)
            finally:
                stop.set()
                group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            elapsed = 0.0
            while True:
                await anyio.sleep(self.progress_every)
                elapsed += self.progress_every
                await ctx.report_progress(
                    min(elapsed, wait_seconds), wait_seconds, f"waiting for a human: {request_id}"
                )
        if failed:
            raise failed[0]
        return waited(found[0])
