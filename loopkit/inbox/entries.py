"""``loopkit inbox``: every open (and deferred) request across the registered workspaces —
and, with a fleet, across every machine's (``machine`` names another machine's). A ghost —
its own ``BLOCKED.md`` gone with nobody waiting — says how to dismiss it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from loopkit import clock
from loopkit.datarecord import record
from loopkit.escalation import dismiss as dismissal
from loopkit.message import LETTERS, age, fold
from loopkit.requests.irreversible import is_irreversible
from loopkit.requests.record import Request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.fleet import Hubs
    from loopkit.requests.locate import Stores


@record(frozen=True, slots=True)
class Entry:
    record: Request
    workspace: Path
    repo: str
    machine: str | None = None  # another machine's request (a fleet); None: this machine's
    ghost: bool = False  # its own BLOCKED.md is gone: nobody will answer it (SPEC §16)

    def row(self) -> dict[str, Any]:
        record = self.record
        now = clock.now()
        asked = clock.parse_iso(record.asked_at)
        timeout = record.timeout_default or {}
        minutes = timeout.get("after_minutes")
        deadline = None
        if isinstance(minutes, int | float) and not record.timed_out_at:
            deadline = clock.iso_seconds(asked + timedelta(minutes=minutes))
        return {
            "request_id": record.request_id,
            "repo": self.repo,
            "workspace": str(self.workspace),
            "machine": self.machine,
            "asked_at": record.asked_at,
            "age_seconds": max(0, int((now - asked).total_seconds())),
            "kind": record.kind,
            "status": record.status,
            "question": record.prompt,
            "choices": [o.label for o in record.options],
            "deadline": deadline,
            "timeout_action": timeout.get("action"),
            "answer": f"loopkit reply --request-id {record.request_id} --reply {_reply(record)}",
            "ghost": self.ghost,
            "dismiss": dismissal.command(record.request_id) if self.ghost else None,
        }


def _reply(record: Request) -> str:
    """What the hint pre-fills: the first letter — or, for an irreversible approval, ``reject``
    with ``approve`` named apart (SPEC §16: never a letter that approves it)."""
    if is_irreversible(record):
        return "reject  # or --reply approve: it cannot be undone"
    return "A"


def open_requests(stores: Stores, hubs: Hubs) -> list[Entry]:
    """Every open or deferred request of every registered workspace — and, with a fleet,
    every other machine's — oldest first. The fleets searched are the environment's and
    every one a registered workspace's configuration names."""
    entries: list[tuple[int, Entry]] = []
    for order, (registered, place) in enumerate(stores.registered()):
        for _, stored in place.store.all():
            if isinstance(stored, Request) and stored.is_open:
                ghost = dismissal.is_ghost(place.store, stored)
                entries.append(
                    (order, Entry(stored, registered.path, registered.repo, ghost=ghost))
                )
    for remote in hubs.remote_open():
        where = Path(remote.workspace)
        entries.append((len(entries), Entry(remote.record, where, remote.repo, remote.machine)))
    # Oldest first; within one second, by workspace as last seen, then as stored.
    entries.sort(key=lambda pair: (clock.parse_iso(pair[1].record.asked_at), pair[0]))
    return [entry for _, entry in entries]


def render(entries: list[Entry]) -> str:
    if not entries:
        return "no open questions"
    blocks = []
    for entry in entries:
        row = entry.row()
        choices = " | ".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(row["choices"][:3]))
        due = (
            f" · times out {row['deadline'][11:16]} UTC → {row['timeout_action']}"
            if row["deadline"]
            else ""
        )
        blocks.append(
            "\n".join(
                [
                    f"{row['repo']} · {age(row['age_seconds'])} ago · {row['kind']}"
                    f"{' (deferred)' if row['status'] == 'deferred' else ''}{due}",
                    f"  Q: {fold(row['question'], 120)}",
                    f"  {choices}" if choices else "  (no choices: reply in your own words)",
                    f"  {row['workspace']}" + (f" (on {row['machine']})" if row["machine"] else ""),
                    f"  answer: {row['answer']}",
                ]
                + (
                    [f"  its BLOCKED.md is gone; nobody will answer it: {row['dismiss']}"]
                    if row["ghost"]
                    else []
                )
            )
        )
    return "\n\n".join(blocks)
