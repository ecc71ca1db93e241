"""How a reply was understood, told back to the human (SPEC section 16, "The human sees how
they were understood").

Read from the record alone — its options and its resolution (``matched_by``, ``note``,
``reason``, the reply as given) — so every surface says the same: ``loopkit reply`` and
``unblock --reply`` (on stderr), the Telegram relay (the tap's answer and the edited
message) and the web inbox::

    → B) Skip the task (letter B); note: "this task is obsolete"
    → C) Abort the loop ("stop": another word for it)
    → no option matched: kept as free text; the agent gets it as a hint with Retry
    → approved ("lgtm")
    → changes requested: no option, no unconditional yes or no; your words are the reason
    → not approved: reply `approve` alone to approve; your words are kept as the reason …

The last is a P0 request's (SPEC §28): only a yes, the approve label or its letter alone
approves one, and the human is told so whatever else they wrote.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import string

from loopkit.message import fold
from loopkit.requests.models import Resolution

TYPE_CHECKING = False
if TYPE_CHECKING:
    from loopkit.requests.models import Option
    from loopkit.requests.record import Request

_QUOTE = 40  # characters of the reply quoted
_WORDS = 200  # characters of a note or reason


def told_back(record: Request) -> str:
    """``→`` and :func:`reading`."""
    return f"→ {reading(record)}"


def reading(record: Request) -> str:
    """How the record's answer was read, in one line (see the module)."""
    res = record.resolution or Resolution()
    if record.status == "deferred":
        reason = (record.deferrals[-1].get("reason") if record.deferrals else None) or None
        return "deferred: it stays open" + _words("reason", reason)
    if record.is_open:
        return "not answered yet"
    if record.status == "expired":
        return f"expired: nobody answered in time; the timeout's action: {res.action or '?'}"
    if res.outcome == "unblocked":
        return "unblocked by hand: no answer, nothing chosen"
    if record.status != "resolved":
        return f"{record.status}: no answer"
    if record.kind in ("approval", "review"):
        return _verdict(record, res)
    chosen = _chosen(record, res)
    if chosen is None:
        if res.chosen_option is not None:  # an option no longer offered: say what was recorded
            return f"{fold(res.chosen_option, _QUOTE)}{_how(res, None, None)}"
        retry = any(o.value == "retry" for o in record.options)
        gets = "a hint with Retry" if retry else "your answer, in your words"
        if record.is_p0:
            return (
                "not chosen: an irreversible choice takes the option alone (its letter or "
                f"label); kept as free text; the agent gets it as {gets}"
            )
        return f"no option matched: kept as free text; the agent gets it as {gets}"
    index, option = chosen
    return f"{_named(index, option)}{_how(res, index, option)}{_words('note', res.note)}"


def _verdict(record: Request, res: Resolution) -> str:
    outcome = str(res.outcome or res.chosen_option or "rejected")
    said = outcome.replace("_", " ")
    if res.matched_by == "free_text" and record.is_p0:  # SPEC §28: the yes alone approves
        return (
            "not approved: reply `approve` alone to approve; your words are kept as the reason "
            f"({said})"
        )
    if res.matched_by == "free_text":  # feedback: changes requested
        return f"{said}: no option, no unconditional yes or no; your words are the reason"
    if res.matched_by in ("yes", "no"):
        word = _quote(_head(res.reply, res.reason))
        return f'{said} ("{word}")' + _words("reason", res.reason)
    chosen = _chosen(record, res)
    if chosen is None:
        return said + _words("reason", res.reason)
    index, option = chosen
    how = _how(res, index, option)
    return f"{said}: {_named(index, option)}{how}{_words('reason', res.reason)}"


def _chosen(record: Request, res: Resolution) -> tuple[int, Option] | None:
    for index, option in enumerate(record.options):
        if res.chosen_option is not None and str(option.value) == res.chosen_option:
            return index, option
    return None


def _named(index: int, option: Option) -> str:
    return f"{_letter(index)}) {fold(option.label, 60)}"


def _letter(index: int) -> str:
    return string.ascii_uppercase[index] if index < 26 else str(index + 1)


def _how(res: Resolution, index: int | None, option: Option | None) -> str:
    """`` (letter B)``, `` ("stop": another word for it)``, … — empty when not recorded."""
    said = _quote(_head(res.reply, res.note or res.reason))
    how = {
        "letter": f"letter {_letter(index or 0)}",
        "number": f"number {(index or 0) + 1}",
        "label": "its label",
        "prefix": f'"{said}": the start of its label',
        "value": f'"{said}": its value',
        "alias": f'"{said}": another word for it',
        "recommendation": f'"{said}": the recommended option',
        "fuzzy": f'"{said}" read as a typo of it',
    }.get(str(res.matched_by))
    return f" ({how})" if how else ""


def _head(reply: str | None, words: str | None) -> str:
    """The reply without the words kept after it (``stop`` of ``stop, I'll do it``)."""
    said = " ".join((reply or "").split())
    if words and said.endswith(words) and len(words) < len(said):
        said = said[: -len(words)].rstrip(" ,:;.)-–—")
    return said


def _quote(text: str | None) -> str:
    return fold(text or "", _QUOTE).replace('"', "'")


def _words(what: str, text: str | None) -> str:
    return f'; {what}: "{fold(text, _WORDS)}"' if text else ""
