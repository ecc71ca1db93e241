"""What answering a request gives back: the record as answered, the SPEC's decision JSON
(section 4), and whether it was a review's *Defer* (the request stays open)."""

from __future__ import annotations

from loopkit.datarecord import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.requests.record import Request


@record(frozen=True, slots=True)
class Answer:
    record: Request
    decision: dict[str, Any]  # the SPEC's decision JSON: models.DECISION_KEYS
    deferred: bool = False
