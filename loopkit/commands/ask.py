"""``loopkit ask``: decide whether a human is needed and, if so, compose the question."""

from __future__ import annotations

import json

from loopkit.commands.echo import echo
from loopkit.errors import EXIT_BLOCKED, EXIT_OK
from loopkit.escalation.ask import Question, prompt_block
from loopkit.escalation.ask import ask as do_ask

TYPE_CHECKING = False  # typing: ~2 ms of a start-up that has none to spare
if TYPE_CHECKING:
    from loopkit.commands.app import App
    from loopkit.requests.models import Kind


def ask(
    app: App,
    *,
    situation: str,
    policy: str,
    prompt: str | None,
    options: tuple[str, ...],
    recommend: str | None,
    category: str | None,
    confidence: float | None,
    irreversible: bool,
    timeout: float | None,
    on_timeout: str | None,
    attach: tuple[str, ...],
    request_id: str | None,
    key: str | None,
    kind: Kind,
    block: bool,
    check_target: str | None,
    criteria: tuple[str, ...],
    artifact_url: str | None,
    as_json: bool,
) -> int:
    asked = do_ask(
        app.config(),
        Question(
            situation=situation,
            policy=policy,
            prompt=prompt,
            options=options,
            recommend=recommend,
            category=category,
            confidence=confidence,
            irreversible=irreversible,
            timeout_minutes=timeout,
            on_timeout=on_timeout,
            attach=attach,
            request_id=request_id,
            key=key,
            kind=kind,
            block=block,
            check_target=check_target,
            criteria=criteria,
            artifact_url=artifact_url,
        ),
        store=app.store(),
        escalator=app.escalator(),
    )
    app.register()
    record = asked.record
    if asked.policy is not None and record is not None:
        from loopkit.answering import policy as policy_answers

        number, entry = asked.policy
        record = policy_answers.answer(app.answering(), app.config(), record, number, entry).record
        block = False  # answered at once: nothing blocks
    code = EXIT_BLOCKED if block and record is not None else EXIT_OK
    if as_json:
        echo(
            json.dumps(
                {
                    "needs_human": asked.needs_human,
                    "reason": asked.reason,
                    "note": asked.note,
                    "request_id": record.request_id if record else None,
                    "request": record.to_dict() if record else None,
                },
                ensure_ascii=False,
            )
        )
        return code
    if record is None:
        echo(f"no human needed: {asked.reason}")
        if asked.note:
            echo(f"note: {asked.note}")
        return code
    if asked.existing:
        echo(f"already asked (key {record.request_key!r}): the open request stands")
    echo(prompt_block(record))
    if asked.policy is not None and record.resolution is not None:
        why = asked.policy[1].why
        echo(f"answered by policy: {record.resolution.parsed_decision} ({why})")
    if asked.joined:
        echo(f"already blocked: joined request {asked.joined}; nothing was sent")
    return code
