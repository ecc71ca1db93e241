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
from loopkit.clock import SystemClock
from loopkit.datarecord import replace
from loopkit.errors import ConfigError, LoopkitError
from loopkit.escalation import delivery
from loopkit.home import home, taps, workspace_id
from loopkit.log import get_logger
from loopkit.message import LETTERS, MAX_LABEL, Button, Reminder, for_phone
from loopkit.redact import Redactor
from loopkit.requests.irreversible import needs_second_tap
from loopkit.requests.models import DeliveryAttempt
from loopkit.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from loopkit.channels import Channel
    from loopkit.clock import Clock
    from loopkit.config import Config
    from loopkit.config.people import Person
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


def channel_for(config: Config, name: str, person: Person | None = None) -> Channel:
    """Channel ``name`` as set in ``config``, aimed at ``person``'s address when given."""
    settings = config.channels.for_person(person) if person else config.channels
    return channels.create(name, settings, budget=config.escalation.send_timeout)


class Sender:
    """Sends a workspace's blocks. ``channel_factory`` is the seam for tests.

    ``leave_to_supervisor``: this process runs inside a supervised agent's session; it sends
    nothing and records no attempt — the supervisor sends (:meth:`send_left`). ``clock``: the
    time the plan is read at and attempts are stamped with (a test's fake one).
    """

    def __init__(
        self,
        config: Config,
        store: RequestStore,
        *,
        channel_factory: ChannelFactory | None = None,
        leave_to_supervisor: bool = False,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.workspace = Workspace.of(config)
        self.clock = clock or SystemClock()
        self._custom_channels = channel_factory is not None
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
        for _ in range(2 * len(delivery.rungs(self.config.escalation)) + 1):
            fresh = self.store.load(record.request_id)
            now = self.clock.now()
            due = delivery.next_due(fresh, self.config.escalation, now)
            if due is None or due.at > now or (due.kind == "reminder" and not reminders):
                break
            if due.kind == delivery.QUIET:
                if not self._skip_quiet(fresh, due):
                    break  # another loopkit process took this step
                continue
            sent = self.send(fresh, due)
            if sent is None:
                break  # another loopkit process took this send
            outcome = sent
            if due.kind == "reminder":
                break  # (the plan says what else is due now: the next person at once, a
                # hard failure's next rung — nothing, when the block's message arrived)
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
        seen = len(delivery.sends(record)) if claim else None
        index = self._start_delivery(record.request_id, name, due.kind, seen, due.person)
        if index is None:
            return None
        hard = False
        rung = delivery.rung_of(delivery.rungs(self.config.escalation), name, due.person)
        try:
            channel = self._channel(rung)
            missing = channel.problems()
            if missing:
                hard = True
                outcome = Outcome(ok=False, status="error", error=missing[0].split(":")[0])
            else:
                outcome = channel.send(self._note(record, due, rung))
        except LoopkitError as exc:
            hard = isinstance(exc, ConfigError)
            outcome = Outcome(ok=False, status="error", error=str(exc))
        except Exception as exc:  # a channel bug must not lose the block
            outcome = Outcome(ok=False, status="error", error=f"{type(exc).__name__}: {exc}")
        hard = hard or outcome.hard
        self._finish_delivery(record.request_id, index, self._redacted(outcome), hard=hard)
        what = "reminder" if due.kind == "reminder" else "message"
        to = f" to {due.person}" if due.person else ""
        if outcome.ok:
            shown = f"sent: {name}{to}" + (" (reminder)" if what == "reminder" else "")
            log.info("delivered", request_id=record.request_id, channel=name, kind=what,
                     person=due.person, msg=shown)  # fmt: skip
        else:
            log.warning(
                "delivery_failed",
                request_id=record.request_id,
                channel=name,
                status=outcome.status,
                error=self.redactor.text(outcome.error or ""),
                person=due.person,
                msg=f"{name} delivery{to} failed: {self.redactor.text(outcome.error or '')}; "
                "BLOCKED.md is in place",
            )
        return outcome

    def _channel(self, rung: delivery.Rung) -> Channel:
        if self._custom_channels:  # a test's seam
            return self.channel_factory(rung.channel)
        return channel_for(self.config, rung.channel, rung.person)

    def _skip_quiet(self, record: Request, due: delivery.Due) -> bool:
        """Record that ``due.person`` was in their quiet hours when their turn came: nothing
        is sent to them, and the ladder moves on to the next person (SPEC §29)."""
        rungs = delivery.rungs(self.config.escalation)
        person = delivery.rung_of(rungs, due.channel, due.person).person
        why = person.describe_quiet() if person is not None else "quiet hours"
        index = self._start_delivery(
            record.request_id, due.channel, "message", len(delivery.sends(record)), due.person
        )
        if index is None:
            return False
        skipped = Outcome(ok=False, status=delivery.QUIET, error=f"not asked: {why}", hard=True)
        self._finish_delivery(record.request_id, index, skipped, hard=True)
        log.info("person_quiet", request_id=record.request_id, person=due.person,
                 msg=f"{due.person} not asked: {why}; the next person is")  # fmt: skip
        return True

    def _note(self, record: Request, due: delivery.Due, rung: delivery.Rung) -> Note:
        repo = self.workspace.repo_name()
        if due.kind != "reminder":
            ladder = delivery.rungs(self.config.escalation)
            before = ladder.index(rung) if rung in ladder else 0
            message = record.message(repo, self._link(record))
            return replace(
                message,
                person=rung.who,
                also_asked=tuple(delivery.asked(record, ladder, before)),
                buttons=self._buttons(record, rung) if rung.channel == "ntfy" else (),
                p0=record.is_p0,
                gate=record.gate is not None,
            )
        try:
            waited = (self.clock.now() - clock.parse_iso(record.asked_at)).total_seconds()
        except ValueError:
            waited = 0.0
        return Reminder(
            request_id=record.request_id,
            repo=repo,
            question=record.prompt,
            waited=waited,
            reply_to=delivery.message_id(record, due.channel, due.person),
            link=self._link(record),
            person=due.person,
        )

    def _buttons(self, record: Request, rung: delivery.Rung) -> tuple[Button, ...]:
        """One-tap answers, one per choice, each signed for this request, choice and person
        (:mod:`loopkit.home.taps`); none without ``LOOPKIT_INBOX_URL``."""
        base = self.config.channels.inbox_url
        if not base:
            return ()
        try:
            key = taps.secret(home())
        except OSError as exc:
            log.warning("taps_unsigned", msg=f"no one-tap buttons: {exc.strerror or exc}")
            return ()
        expires = taps.expires(record.asked_at, record.timeout_default)
        found = []
        for index, option in enumerate(record.options[: len(LETTERS)]):
            tap = taps.Tap(workspace_id(self.workspace.root), record.request_id, index,
                           rung.who or "", expires)  # fmt: skip
            confirm = needs_second_tap(record, LETTERS[index])
            label = for_phone(option.label, MAX_LABEL)
            found.append(Button(label, taps.url(base, key, tap), confirm))
        return tuple(found)

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
        self,
        request_id: str,
        channel: str,
        kind: delivery.Kind,
        seen: int | None,
        person: str | None = None,
    ) -> int | None:
        taken = False

        def start(record: Request) -> bool:
            nonlocal taken
            if seen is not None and len(delivery.sends(record)) != seen:
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
                at=clock.iso_millis(self.clock.now()),
                repeat=kind == "repeat",
                reminder=kind == "reminder",
                person=person,
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
                    base
                    if number == 0
                    else replace(base, at=clock.iso_millis(self.clock.now()), within_send=True)
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
        now = self.clock.now()
        for entry in record.delivery:
            if entry.in_flight and any(rung.holds(entry) for rung in ladder):
                due = delivery.next_due(record, self.config.escalation, now)
                if restarted:
                    due = delivery.Due(str(entry.channel), now, "repeat", entry.person)
                if due is not None and due.kind == "repeat" and due.at <= now:
                    return self.send(record, due)
                return None
        if record.has_own_block and not delivery.sends(record):
            return self.deliver(record)
        return None
