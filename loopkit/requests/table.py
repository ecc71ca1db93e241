"""``loopkit requests``: the list. A list is for finding requests; outcomes are read from
the record (``requests show``): a request leaving the open list is never an approval."""

from __future__ import annotations

from loopkit.message import fold
from loopkit.requests.answer import outcome_of
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.requests.store import RequestStore


def listing(
    store: RequestStore, *, status: str | None = None, kind: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for request_id, record in store.all():
        if not isinstance(record, Request):
            problems.append(f"requests/{request_id}.json skipped: {record}")
            continue
        if (status and record.status != status) or (kind and record.kind != kind):
            continue
        rows.append(
            {
                "request_id": record.request_id,
                "status": record.status,
                "kind": record.kind,
                "created_at": record.created_at,
                "updated_at": record.updated_at,
                "prompt": record.prompt,
                "request_key": record.request_key,
                "outcome": outcome_of(record),
            }
        )
    return rows, problems


def render(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no requests"
    lines = [f"{'ID':<14} {'STATUS':<9} {'KIND':<9} {'CREATED':<21} PROMPT"]
    for row in rows:
        lines.append(
            f"{row['request_id']:<14} {row['status']:<9} {row['kind']:<9} "
            f"{row['created_at']:<21} {fold(row['prompt'], 70)}"
        )
    return "\n".join(lines)
