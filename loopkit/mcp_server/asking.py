"""The tools that ask: ``request_human_input``, ``request_human_review`` and ``escalate``.

Each is the command line's code path with MCP arguments: ``loopkit ask`` is
:func:`loopkit.escalation.ask.ask`, ``loopkit escalate`` is
:meth:`~loopkit.escalation.escalator.Escalator.escalate` (after the same repair). Nothing
here decides, composes or parses on its own. A tool only asks: none records an answer.

The functions run on a worker thread (the SDK runs plain functions there), so a send that
takes seconds never stalls the server.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, Field

from loopkit.answering import policy as policy_answers
from loopkit.datarecord import replace
from loopkit.escalation.ask import Asked as AskResult
from loopkit.escalation.ask import Question, ask
from loopkit.escalation.blockfile import Escalation
from loopkit.escalation.repair import escalate as escalate_after_repair
from loopkit.mcp_server.models import Asked, Category, Escalated, HumanRequest, Kind, TimeoutAction
from loopkit.mcp_server.preview import PreviewStore
from loopkit.mcp_server.workspace import ServedWorkspace
from loopkit.requests.models import Kind as RequestKind
from loopkit.requests.record import Request
from loopkit.requests.store import RequestStore


def _both(snake: str, camel: str, description: str) -> Any:
    """A parameter that takes its snake_case name or seed 003's camelCase one."""
    return Field(validation_alias=AliasChoices(snake, camel), description=description)


def _asked(asked: AskResult, *, dry_run: bool) -> Asked:
    record = asked.record
    return Asked(
        needs_human=asked.needs_human,
        reason=asked.reason,
        note=asked.note,
        request_id=record.request_id if record and (asked.existing or not dry_run) else None,
        request=_record(record) if record else None,
        existing=asked.existing,
        joined=asked.joined,
        dry_run=dry_run,
    )


def _record(record: Request) -> HumanRequest:
    return HumanRequest.model_validate(record.to_dict())


def _newest_with_key(store: RequestStore, key: str) -> Request | None:
    """The latest request asked with ``key``, whatever its status."""
    found = [r for _, r in store.all() if isinstance(r, Request) and r.request_key == key]
    return found[-1] if found else None


class AskingTools:
    """``request_human_input``, ``request_human_review``, ``escalate`` for one workspace."""

    def __init__(self, served: ServedWorkspace) -> None:
        self.served = served

    def request_human_input(
        self,
        situation: Annotated[str, Field(description="1-3 sentences: what blocks you.")],
        policy: Annotated[str, Field(description="The escalation rules that apply.")],
        prompt: Annotated[
            str | None, Field(description="The question: at most 120 characters, one question.")
        ] = None,
        options: Annotated[
            list[str],
            Field(
                description='1-3 answers, "Label" or "Label=value", each label at most 24 '
                "characters (default: Proceed / Skip / Abort)."
            ),
        ] = [],  # noqa: B006  (only ever called with the SDK's validated arguments)
        recommendation: Annotated[
            str | None, Field(description="The option you recommend (its label or value).")
        ] = None,
        category: Annotated[Category | None, Field(description="The decision's category.")] = None,
        confidence: Annotated[
            float | None, Field(ge=0, le=1, description="Your confidence, 0-1.")
        ] = None,
        irreversible: Annotated[
            bool, Field(description="The action cannot be undone (P0: a human decides).")
        ] = False,
        timeout_minutes: Annotated[
            float | None, Field(gt=0, description="Minutes before the timeout action.")
        ] = None,
        on_timeout: Annotated[
            TimeoutAction | None, Field(description="What happens when nobody answers in time.")
        ] = None,
        context_refs: Annotated[
            list[str], Field(description="Files or URLs the human should look at.")
        ] = [],  # noqa: B006
        request_key: Annotated[
            str | None, Field(description="Asking again with this key returns the open request.")
        ] = None,
        kind: Annotated[Kind, Field(description="question, approval or review.")] = "question",
        block: Annotated[
            bool, Field(description="Also write BLOCKED.md and send the message (the loop stops).")
        ] = False,
        dry_run: Annotated[bool, Field(description="Only preview: write nothing.")] = False,
    ) -> Asked:
        """Ask one human one mobile-first question (`loopkit ask`), or learn that none is needed.

        First decides whether a human is needed at all (a confident, non-P0 situation proceeds:
        nothing is written). Then applies the rubric (prompt at most 120 characters and one
        question, 1-3 options of at most 24 characters, no emoji) — a violation is a tool
        error naming the rule. The request is written to requests/<id>.json; with block the
        loop is blocked and the human is messaged, as escalate does. Read the answer with
        get_human_request or wait_for_human: only a human answers.
        """
        question = Question(
            situation=situation,
            policy=policy,
            prompt=prompt,
            options=tuple(options),
            recommend=recommendation,
            category=category,
            confidence=confidence,
            irreversible=irreversible,
            timeout_minutes=timeout_minutes,
            on_timeout=on_timeout,
            attach=tuple(context_refs),
            key=request_key,
            kind=RequestKind(kind),
            block=block and not dry_run,
        )
        config = self.served.config()
        if dry_run:
            preview = PreviewStore(self.served.store().workspace)
            return _asked(ask(config, question, store=preview), dry_run=True)
        asked = ask(
            config, question, store=self.served.store(), escalator=self.served.app.escalator()
        )
        self.served.app.register()
        if asked.policy is not None and asked.record is not None:  # SPEC §30: no one woken
            number, entry = asked.policy
            app = self.served.app
            done = policy_answers.answer(app.answering(), config, asked.record, number, entry)
            asked = replace(asked, record=done.record)
        return _asked(asked, dry_run=False)

    def request_human_review(
        self,
        title: Annotated[str, Field(description="What to check, in one line (at most 120).")],
        reason: Annotated[str, Field(description="Why a human is needed (checks passed, …).")],
        request_key: Annotated[
            str,
            _both(
                "request_key",
                "requestKey",
                "Stable within a review round: the same key returns the existing request; "
                "a new round takes a new key.",
            ),
        ],
        check_target: Annotated[
            str | None, _both("check_target", "checkTarget", "Where and what the human checks.")
        ] = None,
        completion_criteria: Annotated[
            str | list[str] | None,
            _both("completion_criteria", "completionCriteria", "What a finished check answers."),
        ] = None,
        artifact_url: Annotated[
            str | None, _both("artifact_url", "artifactUrl", "An https:// link to the artifact.")
        ] = None,
        expected_updated_at: Annotated[
            str | None,
            _both(
                "expected_updated_at",
                "expectedUpdatedAt",
                "The updated_at you last read of this key's request: a conflict if it changed.",
            ),
        ] = None,
        dry_run: Annotated[
            bool, _both("dry_run", "dryRun", "true (the default): only preview, write nothing.")
        ] = True,
    ) -> Asked:
        """Ask a human to review something (seed 003's shape); camelCase names work too.

        dry_run defaults to true: the preview shows what would be asked and writes nothing;
        call again with dry_run false to save it. The human answers Approve, Request changes
        or Defer (deferred stays open and is not an answer). The same request_key returns the
        existing request, answered or not — read its status and resolution; a stale
        expected_updated_at is a conflict. Opening the link is not checking: the human
        confirms having checked before approving.
        """
        criteria = completion_criteria or ()
        question = Question(
            situation=reason,
            prompt=title,
            kind=RequestKind.REVIEW,
            check_target=check_target,
            criteria=(criteria,) if isinstance(criteria, str) else tuple(criteria),
            artifact_url=artifact_url,
        )
        config = self.served.config()
        store = self.served.store()
        # Every argument is checked by ask itself, on a store that writes nothing.
        preview = ask(config, question, store=PreviewStore(store.workspace))

        def existing() -> Asked | None:
            found = _newest_with_key(store, request_key)
            if found is None:
                return None
            store.load_unchanged(found.request_id, expected_updated_at)  # stale: a conflict
            return Asked(
                needs_human=True, reason=preview.reason, note=None, request_id=found.request_id,
                request=_record(found), existing=True, joined=None, dry_run=dry_run,
            )  # fmt: skip

        if dry_run:
            return existing() or _asked(preview, dry_run=True)
        keyed = replace(question, key=request_key)
        with store.locked():  # one lock from the key lookup to the write: one request per key
            escalator = self.served.app.escalator()
            asked = existing() or _asked(
                ask(config, keyed, store=store, escalator=escalator), dry_run=False
            )
        self.served.app.register()
        return asked

    def escalate(
        self,
        question: Annotated[str, Field(description="The one question for the human.")],
        context: Annotated[
            str, Field(description="What you were doing: feature, file, commit, why now.")
        ],
        attempted: Annotated[
            list[str], Field(min_length=1, description="What you tried, and why it fell short.")
        ],
        choices: Annotated[
            list[str],
            Field(
                min_length=1, max_length=3, description='1-3 answers, each "Label — consequence".'
            ),
        ],
    ) -> Escalated:
        """Block the loop and ask the human (`loopkit escalate`): the agent's "I am stuck".

        Writes requests/<id>.json and BLOCKED.md (a block already open is joined, nothing is
        sent twice) and sends the five-line message over the configured channel. Then end
        your turn: the supervisor resumes the loop with the human's decision.
        """
        config = self.served.config_for_a_block()
        self.served.app.register()
        escalator = self.served.app.escalator(config)
        result = escalate_after_repair(
            escalator, Escalation.of_texts(question, context, attempted, choices)
        )
        broken = self.served.broken
        return Escalated(
            blocked=True,
            request_id=result.request.request_id,
            joined=result.joined,
            request=_record(result.request),
            warning=None if broken is None else f"{broken}; the block was raised anyway",
        )
