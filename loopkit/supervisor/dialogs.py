"""Claude's own questions and permission dialogs, asked of the human by the supervisor
(SPEC section 23).

Run as its SDK runs it (``--permission-prompt-tool stdio``), Claude Code sends a
``can_use_tool`` control request whenever it would show a dialog: its ``AskUserQuestion``
tool (which headless ``-p`` alone never offers the model), or a tool call its permission
mode and rules do not allow. Each becomes a loopkit request, as the hooks make them
(:mod:`loopkit.hooks.question`, :mod:`loopkit.hooks.dialog`): one request per
question; an approval (Allow / Deny / Always allow) bound to what the call runs.

Answering needs a human, who may take hours, so the answer never holds the turn open: the
call is denied with ``interrupt`` — Claude stops its turn at once, having run nothing — the
request is the loop's block, and once it is answered the supervisor resumes the same session
(:mod:`~loopkit.supervisor.resume`) saying so. When Claude asks again — the same call, the
same question — the answer is there: an approval is used once and allows exactly that
call; a question gets its answers in ``updatedInput``.

Nothing here allows a call it could not ask about: any failure denies it.
"""

from __future__ import annotations

from loopkit.escalation import gate
from loopkit.hooks import dialog, question
from loopkit.hooks.approve import call_hash
from loopkit.log import get_logger
from loopkit.message import fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from loopkit.escalation.escalator import Escalator
    from loopkit.requests.record import Request

log = get_logger("loopkit.supervisor")

WAITING = (
    "loopkit asked a human about this; stop here: loopkit resumes this session with the "
    "answer when it is given"
)


class Dialogs:
    """Answers ``can_use_tool`` requests for one workspace (its folder is ``cwd``)."""

    def __init__(self, escalator: Escalator, cwd: str) -> None:
        self.escalator = escalator
        self.cwd = cwd
        self.asked: list[str] = []  # the requests raised (or found open) this turn

    def can_use_tool(self, request: dict[str, Any], session_id: str | None) -> dict[str, Any]:
        """The response to one ``can_use_tool`` request: ``behavior`` ``allow`` (with
        ``updatedInput``) or ``deny`` (with ``message``, and ``interrupt`` while a human is
        asked)."""
        tool = request.get("tool_name")
        given = request.get("input")
        if not isinstance(tool, str) or not isinstance(given, dict):
            return _deny("loopkit cannot read this permission request; it is not allowed")
        event = {
            "tool_name": tool,
            "tool_input": given,
            "cwd": self.cwd,
            "session_id": session_id or "",
            "permission_suggestions": request.get("permission_suggestions") or [],
        }
        try:
            if tool == question.TOOL:
                return self._question(event, given)
            return self._permission(event, given)
        except Exception as exc:  # a dialog that cannot be asked allows nothing
            log.error("dialog_failed", tool=tool,
                      msg=f"cannot ask about Claude's {tool} call: {exc}; denied")  # fmt: skip
            return _deny(f"loopkit could not ask a human about this call ({exc}); not allowed",
                         interrupt=True)  # fmt: skip

    def _question(self, event: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        questions = question.questions_of(given)
        if questions is None:
            return _deny("AskUserQuestion without questions: nothing to ask")
        records = question.ask(self.escalator, event, questions, raised_by="agent")
        state, said = question.answers(self._fresh(records), questions)
        if state == "open":
            self.asked += [r.request_id for r in records]
            log.info("claude_question", msg=f"Claude asks: {fold(records[0].prompt, 100)}")
            return _deny(WAITING, interrupt=True)
        if state == "unanswered":
            return _deny(said)
        return {"behavior": "allow", "updatedInput": {**given, "answers": said}}

    def _permission(self, event: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        digest = call_hash(event["tool_name"], given, self.cwd)
        config = self.escalator.config

        def make() -> Request:
            record = dialog.request_for(config, event, digest)
            record.raised_by = "agent"  # the session that asked is resumed with the answer
            return record

        record = gate.approval(f"claude-permission:{digest}", make, escalator=self.escalator)
        if record.is_open:
            self.asked.append(record.request_id)
            log.info("claude_permission",
                     msg=f"Claude asks permission: {fold(record.prompt, 100)}")  # fmt: skip
            return _deny(WAITING, interrupt=True)
        taken = self.escalator.store.update(record.request_id, dialog.used)  # once
        found = dialog.decision(taken, event)
        if found is None:
            return _deny(f"not allowed: nobody answered ({taken.status})")
        if found["behavior"] == "allow":
            return {**found, "updatedInput": given}
        return found

    def _fresh(self, records: list[Request]) -> list[Request]:
        store = self.escalator.store
        return [store.load(r.request_id) for r in records]


def _deny(message: str, *, interrupt: bool = False) -> dict[str, Any]:
    answer: dict[str, Any] = {"behavior": "deny", "message": message}
    if interrupt:
        answer["interrupt"] = True
    return answer
