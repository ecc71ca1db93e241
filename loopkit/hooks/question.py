"""Claude's own questions (``AskUserQuestion``) under ``loopkit run``, asked as loopkit's.

Claude Code's hooks reference ("PreToolUse decision control", "Defer a tool call for
later", the ``AskUserQuestion`` tool input) gives the round trip: the PreToolUse hook
returns ``permissionDecision: "defer"``, ``claude -p`` exits with ``stop_reason:
"tool_deferred"``, the caller asks, then runs ``claude -p --resume <id>``; the same call
fires the hook again, which returns ``"allow"`` with ``updatedInput``: the original
``questions`` and ``answers`` mapping each question's text to the chosen label
(several labels joined with ", ").

Each question is one loopkit request (key ``claude-question:<sha of the call>:<n>``, bound
to the session): the first is the loop's block, the others wait on it and are asked in
turn. Up to three options go on the phone as choices; a fourth is listed in the request's
situation (the inbox, ``BLOCKED.md``) and read back from a free-text answer. A defer has no
side effect if Claude Code ignores it (a turn of several calls): a question runs nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

from loopkit import config as config_mod
from loopkit import log
from loopkit.escalation.escalator import Escalator
from loopkit.fleet import Hubs
from loopkit.hooks.approve import call_hash, register
from loopkit.message import clean, fold
from loopkit.redact import Redactor, mask_shapes
from loopkit.requests.models import Kind, Option, Resolution
from loopkit.requests.record import Request, new_id
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOOL = "AskUserQuestion"
PHONE_OPTIONS = 3


def questions_of(tool_input: Any) -> list[dict[str, Any]] | None:
    """The tool input's questions, each with a ``question`` and option labels; else None."""
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("questions"), list):
        return None
    found = []
    for item in tool_input["questions"]:
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            return None
        given = item.get("options")
        options: list[Any] = given if isinstance(given, list) else []
        labels = [
            o["label"] for o in options if isinstance(o, dict) and isinstance(o.get("label"), str)
        ]
        found.append({**item, "labels": labels})
    return found or None


def _output(decision: str, reason: str = "", updated: Any = None) -> dict[str, Any]:
    specific: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": decision}
    if reason:
        specific["permissionDecisionReason"] = reason
    if updated is not None:
        specific["updatedInput"] = updated
    return {"hookSpecificOutput": specific}


def request_for(
    config: config_mod.Config,
    event: dict[str, Any],
    item: dict[str, Any],
    key: str,
    n: int,
    of: int,
) -> Request:
    labels = [clean(label) for label in item["labels"]]
    described = {
        clean(o["label"]): clean(str(o.get("description") or ""))
        for o in item.get("options") or []
        if isinstance(o, dict) and isinstance(o.get("label"), str)
    }
    more = labels[PHONE_OPTIONS:]
    lines = [f"Claude asks ({n + 1} of {of})" if of > 1 else "Claude asks"]
    if item.get("header"):
        lines[0] += f" — {clean(str(item['header']))}"
    # BLOCKED.md keeps the first few lines: a fourth option first, the descriptions after.
    if more:
        shown = "; ".join(
            f"{label} — {described[label]}" if described.get(label) else label for label in more
        )
        lines.append(f"Also possible (reply with its words): {shown}")
    if item.get("multiSelect"):
        lines.append("Several may be chosen: reply with the labels, comma-separated.")
    told = [
        f"{label} — {described[label]}" for label in labels[:PHONE_OPTIONS] if described.get(label)
    ]
    if told:
        lines.append("Options: " + "; ".join(told))
    return Request(
        request_id=new_id(),
        prompt=fold(mask_shapes(clean(item["question"])), 120),
        request_key=key,
        kind=Kind.QUESTION,
        situation=mask_shapes("\n".join(lines)),
        policy="Claude Code's own question (AskUserQuestion): it waits for the answer",
        options=[Option(label, value=label) for label in labels[:PHONE_OPTIONS]],
        timeout_default={
            "after_minutes": config.escalation.timeout_minutes,
            "action": config.escalation.timeout_action,
        },
        trigger="claude-question",
        attempted=["nothing: Claude Code holds the question until it is answered"],
        gate={"tool": TOOL, "session": str(event.get("session_id") or ""), "question": n},
    )


def answer_of(record: Request, labels: list[str], *, multi: bool = False) -> str | None:
    """The label(s) the human chose, or their own words; None when there is no answer. With
    ``multi`` (``multiSelect``) a reply of several (``A, D`` or labels) is read part by part
    and the labels joined with ", ", as the reference's ``answers`` has them."""
    if record.status != "resolved":
        return None
    res = record.resolution or Resolution()
    if res.chosen_option:
        for option in record.options:
            if res.chosen_option in (option.value, option.label):
                return option.label
    words = (res.free_text or res.parsed_decision or "").strip()
    if not words:
        return None
    if multi and "," in words:
        return ", ".join(_label(part.strip(), labels) for part in words.split(",") if part.strip())
    return _label(words, labels)


def _label(words: str, labels: list[str]) -> str:
    """A label typed out (a fourth option too), or a letter, as the label; else the words."""
    for label in labels:
        if words.casefold() == label.casefold():
            return label
    letter = words.strip(" )").upper()
    if len(letter) == 1 and "A" <= letter < chr(ord("A") + len(labels)):
        return labels[ord(letter) - ord("A")]
    return words


def decide(workspace: str, event: dict[str, Any]) -> dict[str, Any] | None:
    """The hook's answer for an ``AskUserQuestion`` call under ``loopkit run``: defer while a
    question is unanswered, allow with the answers once all are, deny when one ended without
    an answer. None (no decision) for an input that holds no questions."""
    tool_input = event.get("tool_input")
    questions = questions_of(tool_input)
    if questions is None or not Path(workspace).is_dir():
        return None
    config = config_mod.load(Path(workspace))
    log.setup(
        Workspace.of(config).events_file,
        Redactor(config.channels.secrets()),
        stream=sys.stderr,
        console_level="warning",
    )
    register(config)
    hubs = Hubs()
    try:
        store = RequestStore(Workspace.of(config), hub=hubs.for_config(config))
        escalator = Escalator(config, store=store, agent_session=True)
        records = ask(escalator, {**event, "cwd": str(event.get("cwd") or workspace)}, questions)
    finally:
        hubs.close()
    state, said = answers(records, questions)
    if state == "open":
        return _output("defer")
    if state == "unanswered":
        return _output("deny", said)
    assert isinstance(tool_input, dict)
    return _output("allow", "answered by a human via loopkit", {**tool_input, "answers": said})


def ask(
    escalator: Escalator,
    event: dict[str, Any],
    questions: list[dict[str, Any]],
    *,
    raised_by: str | None = None,
) -> list[Request]:
    """One request per question of the call in ``event`` (found again by its key when asked
    before): the first is the loop's block, the others join it. Shared by the hook and by
    the supervisor's Claude driver (:mod:`loopkit.supervisor.dialogs`)."""
    config, store = escalator.config, escalator.store
    digest = call_hash(TOOL, event.get("tool_input"), str(event["cwd"]))
    records: list[Request] = []
    fresh: list[Request] = []
    with store.locked():
        known = {r.request_key: r for _, r in store.all() if isinstance(r, Request)}
        for n, item in enumerate(questions):
            key = f"claude-question:{digest}:{n}"
            record = known.get(key)
            if record is None:
                record = request_for(config, event, item, key, n, len(questions))
                record.raised_by = raised_by or record.raised_by
                placed = escalator.place(record, own=True)
                if placed.joined is None:
                    fresh.append(record)
            records.append(record)
    for record in fresh:
        escalator.deliver(record)
    return records


def answers(records: list[Request], questions: list[dict[str, Any]]) -> tuple[str, Any]:
    """``("open", None)`` while a question waits; ``("unanswered", why)`` when one ended
    without an answer; else ``("answered", {question: answer})`` as Claude Code's
    ``AskUserQuestion`` takes them in ``updatedInput.answers``."""
    found: dict[str, str] = {}
    for record, item in zip(records, questions, strict=True):
        if record.is_open:
            return "open", None
        answer = answer_of(record, item["labels"], multi=bool(item.get("multiSelect")))
        if answer is None:
            return "unanswered", f"the question was not answered ({record.status})"
        found[item["question"]] = answer
    return "answered", found
