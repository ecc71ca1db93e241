"""What the tools return: typed models, so every tool publishes an ``outputSchema`` and
answers with structured content — the same JSON as the command line's ``--json``.

A request record is :class:`HumanRequest`: SPEC section 4's fields typed, every other field
loopkit keeps on a record (``review``, ``gate``, ``deferrals`` …) passed through as it is, so
``get_human_request`` returns exactly what ``loopkit requests show`` prints.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# The record's kinds and statuses and the config's timeout actions, as run-time types for
# the tools' schemas (loopkit's own modules name them for the type checker only, so that a
# short command imports no typing); tests/mcp/test_mcp_tools.py holds them to the tuples.
Kind = Literal["question", "approval", "review"]
Status = Literal["open", "deferred", "resolved", "expired", "dismissed"]
TimeoutAction = Literal["skip", "queue", "retry", "abort"]
Category = Literal[
    "ontology", "ux", "one-way-door", "third-party", "cost", "scope", "data-loss", "security",
    "legal",
]  # fmt: skip
Outcome = Literal[
    "approved", "chosen", "rejected", "changes_requested", "aborted", "expired", "unblocked",
    "dismissed", "open",
]  # fmt: skip
StatusFilter = Literal["open", "deferred", "resolved", "expired", "dismissed", "all"]


class HumanRequest(BaseModel):
    """One request record (``requests/<id>.json``), as ``loopkit requests show`` prints it."""

    model_config = ConfigDict(extra="allow")

    schema_version: int
    request_id: str
    request_key: str | None
    created_at: str
    updated_at: str = Field(description="Pass it back as expected_updated_at to guard a change.")
    kind: Kind
    situation: str
    policy: str
    prompt: str = Field(description="The question the human sees (at most 120 characters).")
    options: list[dict[str, Any]] = Field(description="The answers offered: label, value.")
    recommendation: str | None
    timeout_default: dict[str, Any] = Field(description="after_minutes, action.")
    context_refs: list[str]
    status: Status = Field(
        description="open, deferred (a review put off: not an answer), resolved, expired or "
        "dismissed (closed by a human because nobody will answer it: not an answer)."
    )
    delivery: list[dict[str, Any]]
    resolution: dict[str, Any] | None = Field(
        description="How it ended (outcome, chosen_option, free_text, parsed_decision, by, via); "
        "null while open."
    )


class Asked(BaseModel):
    """``request_human_input`` / ``request_human_review``: ``loopkit ask --json``'s object."""

    needs_human: bool
    reason: str = Field(description="Why a human is (or is not) needed.")
    note: str | None = Field(description="Set when the agent proceeds with a note.")
    request_id: str | None = Field(
        description="The request to read or wait on; null when no human is needed or on a "
        "dry run that found no request with this key."
    )
    request: HumanRequest | None = Field(
        description="The record; on a dry run the preview of what would be written."
    )
    existing: bool = Field(description="The request_key already had this request: no new one.")
    joined: str | None = Field(
        description="block: the loop was blocked already; the question joined that block."
    )
    dry_run: bool = Field(description="Nothing was written.")


class RequestRow(BaseModel):
    """One line of ``loopkit requests --json``."""

    request_id: str
    status: Status
    kind: Kind
    created_at: str
    updated_at: str
    prompt: str
    request_key: str | None
    outcome: Outcome = Field(description="Read from the record, never from a shrinking list.")


class Listed(BaseModel):
    """``list_human_requests``: the matching requests, oldest first."""

    requests: list[RequestRow]
    problems: list[str] = Field(description="Records that could not be read (skipped).")


class Waited(BaseModel):
    """``wait_for_human``: ``loopkit requests wait``'s object."""

    request_id: str
    status: Status = Field(description="open or deferred when the time ran out: no answer yet.")
    outcome: Outcome = Field(
        description="approved / chosen: go ahead; rejected / aborted / expired / unblocked / "
        "dismissed: do not; changes_requested: read resolution; open: nobody answered yet."
    )
    parsed_decision: str | None
    reason: str | None


class Escalated(BaseModel):
    """``escalate``: the block (the command line's exit 2)."""

    blocked: Literal[True]
    request_id: str
    joined: str | None = Field(
        description="The loop was blocked already: the open block's request this question joined."
    )
    request: HumanRequest
    warning: str | None = Field(description="loopkit.toml is broken: raised with what is valid.")
