"""Escalation (SPEC section 3): persist the request, write BLOCKED.md, send, record.

The order is the contract: 1. ``requests/<id>.json`` is persisted; 2. ``BLOCKED.md`` is
created (never overwritten); 3. the message is sent; 4. the outcome is recorded in the
request's ``delivery`` list. Whatever the channel does, 1 and 2 have happened when this
returns. A delivery entry is written with ``ok: null`` *before* sending, so a crash mid-send
is visible afterwards and the message is sent once more, marked as a repeat.

An escalation while ``BLOCKED.md`` exists joins the open block: its question is recorded
on the open request (never lost) and nothing is sent.
"""

from __future__ import annotations

from loopkit import clock
from loopkit.datarecord import record, replace
from loopkit.errors import LoopkitError
from loopkit.escalation import blockfile, evidence
from loopkit.escalation.blockfile import Choice, slug
from loopkit.escalation.sender import Sender
from loopkit.log import get_logger
from loopkit.message import fold
from loopkit.redact import Redactor
from loopkit.requests.irreversible import is_irreversible
from loopkit.requests.models import Block, Option
from loopkit.requests.record import Request, new_id
from loopkit.requests.store import RequestStore
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from loopkit.channels import Outcome
    from loopkit.clock import Clock
    from loopkit.config import Config
    from loopkit.escalation.blockfile import Escalation
    from loopkit.escalation.sender import ChannelFactory

log = get_logger("loopkit.escalation")


@record(frozen=True, slots=True)
class Result:
    request: Request
    joined: str | None = None  # the open block's request id, when this escalation joined it
    outcome: Outcome | None = None
    template_problem: str | None = None


def answer_hint(
    ladder: str | tuple[str, ...],
    choices: int = 3,
    *,
    irreversible: bool = False,
    slack_app: bool = False,
) -> str:
    """The last line of the Choices section: how this ladder's human answers. For an
    irreversible approval it offers ``reject`` and names ``approve``, never the letter that
    approves (SPEC §16): a copied hint must not run a ``DROP TABLE``. ``slack_app``: Slack is
    the two-way app (``slack_mode = "socket"``), not the one-way webhook."""
    names = (ladder,) if isinstance(ladder, str) else ladder
    places = [n for n, on in (("Telegram", "telegram" in names),
                              ("Slack", slack_app and "slack" in names),
                              ("the ntfy push", "ntfy" in names)) if on]  # fmt: skip
    tap = f"tap a button in {' or '.join(places)}, " if places else ""
    one_way = "Slack cannot answer back: " if names[0] == "slack" and not tap else ""
    if irreversible:
        return (
            f"To answer: {one_way}{tap}run `loopkit unblock --reply reject` (`--reply approve` "
            "approves it: it cannot be undone; or your own words), or delete this file to resume."
        )
    others = {1: "or your own words", 2: "or B, or your own words"}
    alternatives = others.get(choices, "or B, C, or your own words")
    return (
        f"To answer: {one_way}{tap}run `loopkit unblock --reply A` ({alternatives}), "
        "or delete this file to resume."
    )


def head_commit(workspace: Workspace) -> str | None:
    """The short commit the workspace's git checkout is at (``git rev-parse``), if any;
    outside a checkout no ``git`` is run."""
    if evidence.git_top(workspace.root) is None:
        return None
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(workspace.root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


class Escalator:
    """Raises blocks for one workspace. ``channel_factory`` and ``commit`` (what BLOCKED.md
    names as the commit: a ``git`` subprocess) are the seams for tests.

    ``agent_session``: this process runs inside a supervised agent's session
    (:func:`loopkit.agentsession.inside`, decided where the command is assembled). What it
    raises is marked ``raised_by: "agent"`` — a question for the loop, its answer for the
    agent's next run — and its send is left to the supervisor, which holds the channel
    secrets the agent's environment lacks: nothing is sent or recorded from here.
    """

    def __init__(
        self,
        config: Config,
        *,
        channel_factory: ChannelFactory | None = None,
        store: RequestStore | None = None,
        commit: Callable[[Workspace], str | None] = head_commit,
        agent_session: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.workspace = Workspace.of(config)
        self.store = store or RequestStore(self.workspace)
        self.agent_session = agent_session
        self.sender = Sender(config, self.store, channel_factory=channel_factory,
                             leave_to_supervisor=agent_session, clock=clock)  # fmt: skip
        self.commit = commit

    def escalate(self, escalation: Escalation) -> Result:
        escalation = escalation.cleaned()
        escalation.validate()
        return self.raise_block(self._new_record(escalation))

    def adopt(self, escalation: Escalation, *, replaces: str | None = None) -> Result:
        """An agent's hand-written BLOCKED.md (no marker): persist its request, leave the file
        exactly as it is, send. Nothing is refused: the question must reach the human.
        ``replaces``: the request whose record could not be read, which this one is asked in
        place of (a tap on that one's message answers this one)."""
        escalation = escalation.cleaned()
        record = self._new_record(escalation)
        record.block = Block.ADOPTED
        if replaces is not None:
            record.extra["replaces"] = replaces
        self.store.create(record)
        log.info(
            "adopted",
            request_id=record.request_id,
            question=fold(record.prompt),
            msg=f"the agent wrote {self.workspace.blocked.name} by hand: adopted as "
            f"requests/{record.request_id}.json (the file is left as it is)",
        )
        outcome = self.sender.deliver(record)
        return Result(self.store.load(record.request_id), None, outcome)

    def restore(self, escalation: Escalation, request_id: str) -> Result:
        """A ``BLOCKED.md`` of loopkit's own whose request is gone (the agent deleted
        ``requests/`` or ``.loopkit/``): its request made again from the file's sections, under
        the id its marker names, and sent — a question is never hidden by deleting its record
        (SPEC section 17). The file is left as it is: it is this request's block."""
        escalation = replace(escalation.cleaned(), request_id=request_id, trigger="restored")
        record = self._new_record(escalation)
        record.block = Block.RAISED
        # Sent already by this process (the agent deleted the record after): the attempts
        # are its again — the message is not sent twice, and a tap on it still answers.
        record.delivery = list(self.sender.sent(request_id))
        self.store.create(record)
        sent = any(attempt.ok for attempt in record.delivery)
        log.warning(
            "block_restored",
            request_id=request_id,
            question=fold(record.prompt),
            msg=f"{self.workspace.blocked.name} names request {request_id}, whose record is "
            f"gone: raised again from the file as requests/{request_id}.json"
            + (" (its message was sent already: not again)" if sent else " and sent"),
        )
        outcome = self.sender.deliver(record)
        return Result(self.store.load(request_id), None, outcome)

    def raise_block(self, record: Request) -> Result:
        """Steps 1–4 for a record not yet persisted (``escalate``, ``ask --block``, ``gate``)."""
        placed = self.place(record)
        if placed.joined:
            return placed
        outcome = self.sender.deliver(record)
        return Result(self.store.load(record.request_id), None, outcome, placed.template_problem)

    def awaits_own_block(self, record: Request) -> bool:
        """``record`` has not been asked yet: it joined another block that has gone since."""
        joined = record.block == "joined"
        return joined and blockfile.state(self.workspace.blocked) == "absent"

    def place(self, record: Request, *, persisted: bool = False, own: bool = False) -> Result:
        """Steps 1–2, as one recoverable transaction: persist ``record``, create BLOCKED.md.

        BLOCKED.md is rendered first (the template and ``git rev-parse`` are the slow part),
        then, under the store lock: the record is saved ``block: pending``, BLOCKED.md is
        created from the text already rendered, and it becomes ``raised``. A crash in
        between leaves a pending record that :mod:`~loopkit.escalation.repair` finishes at the
        next start — so the block file and its request are never out of step for good, and a
        question is never silently dropped. Something other than a file at BLOCKED.md leaves
        the question saved (pending) and says what is in the way.

        ``persisted``: the record is on disk already (a request announced late, e.g. a gate
        whose first ask joined another block). ``own``: when joining, keep ``record`` as a
        request of its own (``ask`` and ``gate`` have keys to find it by); otherwise the
        question is only added to the open block's request. Nothing is sent; :meth:`deliver`
        does that, outside the store lock.
        """
        path = self.workspace.blocked
        if self.agent_session and record.raised_by is None:
            record.raised_by = "agent"
        raised_at = clock.iso_seconds() if persisted else None  # its timeout starts now
        text, problem = self._render(replace(record, raised_at=raised_at or record.raised_at))
        with self.store.locked():
            if blockfile.state(path) == "file":
                return self._join(record, persisted=persisted, own=own)
            record.block, record.joined_to = Block.PENDING, None
            if persisted:
                record.raised_at = raised_at
                self.store.save(record)
            else:
                self.store.create(record)
            if blockfile.state(path) == "other":
                raise blockfile.in_the_way(path, record.request_id)
            if not blockfile.create(path, text):
                # Someone else's BLOCKED.md appeared between our check and our write.
                return self._join(record, persisted=True, own=own)
            record.block = Block.RAISED
            self.store.save(record)
        if problem:
            log.warning("template_fallback", msg=problem)
        log.info(
            "escalated",
            request_id=record.request_id,
            trigger=record.trigger,
            question=fold(record.prompt),
            msg=f"blocked: {fold(record.prompt, 120)} (requests/{record.request_id}.json)",
        )
        return Result(record, None, None, problem)

    def write_pending(self, record: Request) -> Result:
        """Finish a transaction a crash cut short (``block: pending``): write its BLOCKED.md,
        or join the block that stands now. Called under the store lock, by the repair."""
        path = self.workspace.blocked
        state = blockfile.state(path)
        if state == "other":
            raise blockfile.in_the_way(path, record.request_id)
        if state == "file" and blockfile.request_id_of(path) == record.request_id:
            record.block = Block.RAISED  # written before the crash; only the record was left
            self.store.save(record)
            return Result(record, None)
        if state == "absent":
            text, problem = self._render(record)
            if blockfile.create(path, text):
                record.block = Block.RAISED
                self.store.save(record)
                return Result(record, None, None, problem)
        return self._join(record, persisted=True, own=True)

    def _new_record(self, escalation: Escalation) -> Request:
        timeout = {
            "after_minutes": self.config.escalation.timeout_minutes,
            "action": self.config.escalation.timeout_action,
        }
        record = Request(
            request_id=escalation.request_id or new_id(),
            prompt=fold(escalation.question, 1000),
            situation=escalation.context.strip(),
            options=[
                Option(c.label, c.value or slug(c.label), c.consequence, c.aliases)
                for c in escalation.choices
            ],
            timeout_default=timeout,
            trigger=escalation.trigger,
            attempted=[a.strip() for a in escalation.attempted if a.strip()],
            raised_by=escalation.raised_by,
            task=escalation.task,
            iteration=escalation.iteration,
            summary=escalation.summary,
        )
        return record

    def _render(self, record: Request) -> tuple[str, str | None]:
        trigger = record.trigger or record.kind
        commit = self.commit(self.workspace)
        at_commit = f" at commit {commit}" if commit else ""
        meta = [
            f"Trigger: {trigger} · request: requests/{record.request_id}.json · "
            f"raised {record.asked_at}{at_commit}"
        ]
        if record.context_refs:
            meta.append("See: " + ", ".join(record.context_refs))
        choices = [
            Choice(o.label, o.consequence or "", str(o.value), o.aliases) for o in record.options
        ]
        variables = blockfile.template_vars(
            request_id=record.request_id,
            question=record.prompt,
            context=record.situation,
            attempted=record.attempted,
            choices=choices,
            meta=meta,
            answer_hint=answer_hint(
                self.config.escalation.channels,
                len(choices),
                irreversible=is_irreversible(record),
                slack_app=self.config.channels.slack_socket,
            ),
            repo=self.workspace.repo_name(),
            trigger=trigger,
            at=record.asked_at,
            evidence=self._evidence(),
        )
        return blockfile.render(self.workspace, variables)

    def _evidence(self) -> list[str]:
        """What the human needs to decide (SPEC §22): the agent's last output and the diff
        since the task started (``git`` runs only inside a git checkout)."""
        redactor = Redactor(self.config.channels.secrets())
        base = evidence.task_base(self.workspace)
        return evidence.gather(self.workspace, redactor, base=base).lines()

    def _join(self, record: Request, *, persisted: bool, own: bool = False) -> Result:
        """Record this question on the open block's request; send nothing.

        Called under the store lock. ``persisted``: ``record`` is already on disk. When the
        block's request is answered already, or the block names none, the question stays a
        request of its own (``block: joined``), raised by the supervisor when that block goes.
        """
        open_id = blockfile.request_id_of(self.workspace.blocked)
        record.block = Block.NONE
        if own and not persisted:
            # Its first write already names the block it joins: a crash before the open
            # request notes it leaves a question that is raised when that block goes.
            record.block, record.joined_to = Block.JOINED, open_id or None
            self.store.create(record)
            persisted = True
        entry = {
            "at": clock.iso_seconds(),
            "question": record.prompt,
            "context": record.situation,
            "attempted": list(record.attempted),
            "trigger": record.trigger,
            "request_id": record.request_id if persisted else None,
        }
        target: Request | None = None
        answered = False

        def add(open_record: Request) -> bool:
            nonlocal answered
            answered = not open_record.is_open
            noted = entry["request_id"] is not None and any(
                one.get("request_id") == entry["request_id"] for one in open_record.joined
            )
            if answered or noted:
                return False
            open_record.joined.append(entry)
            return True

        if open_id and open_id != record.request_id:
            try:
                target = self.store.update(open_id, add)
            except LoopkitError:
                target = None
        if answered:
            # The block stands, but its question is answered already: this question would
            # be lost on it. It stays a request of its own, raised when that block goes.
            target = None
        if target is not None:
            if persisted:
                record.block, record.joined_to = Block.JOINED, open_id or None
                self.store.save(record)
            result = record if own else target
        else:
            # A BLOCKED.md loopkit did not write: keep the question as a record of its own.
            record.block, record.joined_to = Block.JOINED, open_id or None
            if persisted:
                self.store.save(record)
            else:
                self.store.create(record)
            result = record
        log.info(
            "escalation_joined",
            request_id=result.request_id,
            joined=open_id,
            question=fold(record.prompt),
            msg=f"already blocked ({self.workspace.blocked.name}); the question was added to "
            f"request {result.request_id}, nothing sent",
        )
        return Result(result, joined=open_id or result.request_id)

    def deliver(self, record: Request, *, reminders: bool = False) -> Outcome | None:
        """Steps 3 and 4 (:meth:`Sender.deliver`): send what is due now, record each attempt."""
        return self.sender.deliver(record, reminders=reminders)

    def send_left(self, record: Request) -> Outcome | None:
        """A block the agent raised and left unsent, sent now (:meth:`Sender.send_left`)."""
        return self.sender.send_left(record)

    def resume_delivery(self, record: Request) -> Outcome | None:
        """After a restart: what this supervisor left undone (:meth:`Sender.recover`)."""
        return self.sender.recover(record, restarted=True)
