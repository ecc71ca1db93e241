"""Steps 3 and 4 of an escalation: send over the channel ladder, record every attempt.

What to send and when is :mod:`~loopkit.escalation.delivery`'s plan; this module carries it
out. A delivery entry is written with ``ok: null`` *before* sending, so a crash mid-send is
visible afterwards and the message is sent once more, marked as a repeat. Each try — the
failed first try of a send retried within its budget included — is one entry.

Inside a supervised agent's session (SPEC section 16) nothing is sent and nothing recorded:
the agent's process has no channel secrets, by design, so its send could only fail. The
supervisor, which watches the workspace while the agent runs, sends the block as soon as it
appears (:meth:`Sender.send_left`).
"""

from __future__ import annotations

from loopkit import channels, clock
from loopkit.channels import Outcome
from loopkit.datarecord import replace
from loopkit.errors import ConfigError, LoopkitError
from loopkit.escalation import delivery
from loopkit.home import workspace_id
from loopkit.log import get_logger
from loopkit.message import Reminder
from loopkit.redact import Redactor
from loopkit.requests.models import DeliveryAttempt
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from loopkit.channels import Channel
    from loopkit.config import Config
    from loopkit.message import Note
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

log = get_logger("loopkit.escalation")

if TYPE_CHECKING:
    ChannelFactory = Callable[[str], Channel]
INTERRUPTED = "loopkit stopped mid-send; outcome unknown"


def default_factory(config: Config) -> ChannelFactory:
    def create(name: str) -> Channel:
        return channels.create(name, config.channels, budget=config.escalation.send_timeout)

    return create


class Sender:
    """Sends a workspace's blocks. ``channel_factory`` is the seam for tests.

    ``leave_to_supervisor``: this process runs inside a supervised agent's session; it sends
    nothing and records no attempt — the supervisor sends (:meth:`send_left`).
    """

    def __init__(
        self,
        config: Config,
        store: RequestStore,
        *,
        channel_factory: ChannelFactory | None = None,
        leave_to_supervisor: bool = False,
    ) -> None:
        self.config = config
        self.store = store
        self.workspace = Workspace.of(config)
        self.channel_factory = channel_factory or default_factory(config)
        self.redactor = Redactor(config.channels.secrets())
        self.leave_to_supervisor = leave_to_supervisor
        # What this process sent of each request, as recorded: a record the agent deletes
        # after its send is raised again knowing it (SPEC §28: sent once, its buttons live).
        self._sent: dict[str, tuple[DeliveryAttempt, ...]] = {}

    def sent(self, request_id: str) -> tuple[DeliveryAttempt, ...]:
        """The attempts this process recorded for ``request_id`` (none: it sent nothing)."""
        return self._sent.get(request_id, ())

    def deliver(self, record: Request, *, reminders: bool = False) -> Outcome | None:
        """Steps 3 and 4: send what is due now and record each attempt. Never raises for a
        send. The first rung is tried first; a rung that fails hard hands over to the next at
        once; a soft failure is retried later (:mod:`~loopkit.escalation.delivery`, by
        whoever watches the block, which also sends the ``reminders``). Returns the last
        outcome, None when nothing was due."""
        if self.leave_to_supervisor:
            if delivery.rungs(self.config.escalation):
                log.info(
                    "send_left_to_supervisor",
                    request_id=record.request_id,
                    msg="inside the agent's session: the supervisor sends the message",
                )
            return None
        outcome: Outcome | None = None
        for _ in range(len(self.config.escalation.ladder) + 1):
            fresh = self.store.load(record.request_id)
            due = delivery.next_due(fresh, self.config.escalation, clock.now())
            if due is None or due.at > clock.now() or (due.kind == "reminder" and not reminders):
                break
            sent = self.send(fresh, due)
            if sent is None:
                break  # another loopkit process took this send
            outcome = sent
            if outcome.ok or due.kind == "reminder":
                break
        return outcome

    def send_left(self, record: Request) -> Outcome | None:
        """The supervisor's side: send a block its agent raised and left unsent (``raised_by:
        "agent"``, no attempt yet) — now, as :meth:`deliver` would. Anything else is left to
        its own schedule; None when nothing was sent."""
        unsent = record.raised_by == "agent" and not record.delivery
        if not (unsent and record.is_open and record.has_own_block):
            return None
        return self.deliver(record)

    def send(self, record: Request, due: delivery.Due, *, claim: bool = True) -> Outcome | None:
        """One send of ``due`` (the message, a repeat, or a reminder), recorded.

        ``claim``: the send was planned from ``record`` as loaded; when another process
        recorded an attempt since (a supervisor, ``serve`` and ``escalate`` may all look at
        one block), it has taken this send and None is returned, nothing sent.
        """
        name = due.channel
        seen = len(record.delivery) if claim else None
        index = self._start_delivery(record.request_id, name, due.kind, seen)
        if index is None:
            return None
        hard = False
        try:
            channel = self.channel_factory(name)
            missing = channel.problems()
            if missing:
                hard = True
                outcome = Outcome(ok=False, status="error", error=missing[0].split(":")[0])
            else:
                outcome = channel.send(self._note(record, due))
        except LoopkitError as exc:
            hard = isinstance(exc, ConfigError)
            outcome = Outcome(ok=False, status="error", error=str(exc))
        except Exception as exc:  # a channel bug must not lose the block
            outcome = Outcome(ok=False, status="error", error=f"{type(exc).__name__}: {exc}")
        hard = hard or outcome.hard
        self._finish_delivery(record.request_id, index, self._redacted(outcome), hard=hard)
        what = "reminder" if due.kind == "reminder" else "message"
        if outcome.ok:
            shown = f"sent: {name}" + (" (reminder)" if what == "reminder" else "")
            log.info("delivered", request_id=record.request_id, channel=name, kind=what, msg=shown)
        else:
            log.warning(
                "delivery_failed",
                request_id=record.request_id,
                channel=name,
                status=outcome.status,
                error=self.redactor.text(outcome.error or ""),
                msg=f"{name} delivery failed: {self.redactor.text(outcome.error or '')}; "
                "BLOCKED.md is in place",
            )
        return outcome

    def _note(self, record: Request, due: delivery.Due) -> Note:
        repo = self.workspace.repo_name()
        if due.kind != "reminder":
            return record.message(repo, self._link(record))
        try:
            waited = (clock.now() - clock.parse_iso(record.asked_at)).total_seconds()
        except ValueError:
            waited = 0.0
        return Reminder(
            request_id=record.request_id,
            repo=repo,
            question=record.prompt,
            waited=waited,
            reply_to=delivery.message_id(record, due.channel),
            link=self._link(record),
        )

    def _link(self, record: Request) -> str | None:
        base = self.config.channels.inbox_url
        if not base:
            return None
        return f"{base}/r/{workspace_id(self.workspace.root)}/{record.request_id}"

    def _redacted(self, outcome: Outcome) -> Outcome:
        def clean(o: Outcome) -> Outcome:
            return replace(o, error=self.redactor.text(o.error) if o.error else None)

        return replace(clean(outcome), earlier=tuple(clean(o) for o in outcome.earlier))

    def _start_delivery(
        self, request_id: str, channel: str, kind: delivery.Kind, seen: int | None
    ) -> int | None:
        taken = False

        def start(record: Request) -> bool:
            nonlocal taken
            if seen is not None and len(record.delivery) != seen:
                taken = True
                return False
            record.delivery = [
                # No longer in flight; whether it arrived is unknown.
                replace(entry, ok=False, status="interrupted", error=INTERRUPTED)
                if entry.in_flight
                else entry
                for entry in record.delivery
            ]
            attempt = DeliveryAttempt(
                channel=channel,
                at=clock.iso_millis(),
                repeat=kind == "repeat",
                reminder=kind == "reminder",
            )
            record.delivery.append(attempt)
            return True

        index = len(self.store.update(request_id, start).delivery) - 1
        return None if taken else index

    def _finish_delivery(
        self, request_id: str, index: int, outcome: Outcome, *, hard: bool = False
    ) -> None:
        """The attempt at ``index`` gets the first try's outcome; a try retried within the
        send (a 500, then a 200) is an attempt of its own, recorded after it."""
        tries = [*outcome.earlier, outcome]

        def finish(record: Request) -> None:
            base = record.delivery[index]
            entries = []
            for number, one in enumerate(tries):
                # A try retried within the same send (a 500, then a 200) is an attempt of its
                # own; marked, so that the backoff counts sends, not tries.
                entry = (
                    base if number == 0 else replace(base, at=clock.iso_millis(), within_send=True)
                )
                entry = replace(
                    entry,
                    ok=bool(one.ok),
                    status=one.status,
                    error=one.error,
                    message_id=one.message_id,
                    hard=entry.hard or (hard and one is outcome),
                )
                entries.append(entry)
            record.delivery[index : index + 1] = entries

        done = self.store.update(request_id, finish)
        self._sent[request_id] = tuple(done.delivery)

    def recover(self, record: Request, *, restarted: bool = False) -> Outcome | None:
        """What a crash left undone: a block's message never tried is sent; an attempt left
        in flight (outcome unknown) is sent once more, as a repeat — at once by a supervisor
        that ``restarted`` (the attempt was its own), else only once it is older than the
        grace period, so no live process is in the middle of it. Nothing else: retries and
        reminders wait for their time."""
        ladder = delivery.rungs(self.config.escalation)
        if not ladder or not record.is_open:
            return None
        if self.leave_to_supervisor:
            return None  # the supervisor's to send
        now = clock.now()
        for entry in record.delivery:
            if entry.in_flight and entry.channel in ladder:
                due = delivery.next_due(record, self.config.escalation, now)
                if restarted:
                    due = delivery.Due(entry.channel, now, "repeat")
                if due is not None and due.kind == "repeat" and due.at <= now:
                    return self.send(record, due)
                return None
        if record.has_own_block and not record.delivery:
            return self.send(record, delivery.Due(ladder[0], now))
        return None
