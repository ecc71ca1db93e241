"""Telling everyone who was asked how the question ended, where a message cannot be edited
(SPEC section 29): an ntfy push cannot be changed once sent, so each person asked there gets
a follow-up push; a PagerDuty incident is resolved.

:class:`FollowUps` is one of the answering service's tellers (it is never the surface an
answer came by, so it is always told). For each person the block reached on ntfy:

- the one who answered gets the reading — ``recorded: → B) Skip the task (letter B)``;
- everyone else: ``answered by Ben via ntfy: Skip the task`` (or how else it ended);

and the incident of a block sent to PagerDuty is resolved (its ``dedup_key`` is the request
id). Exactly once per person and ending, whichever processes tell it (``run`` and ``serve``
both may): each follow-up is claimed in the request's record, under its lock, before it is
sent, as an entry of ``delivery`` with ``followup: "outcome"``. A late answer (a tap on a
request answered already) is told to the one who gave it (:meth:`FollowUps.late`), each
time; opening a request in the inbox acknowledges its incident (:meth:`FollowUps.opened`),
once.
"""

from __future__ import annotations

import threading

from loopkit import clock
from loopkit.channels import Outcome
from loopkit.channels.pagerduty import PagerDutyChannel
from loopkit.config.people import find
from loopkit.datarecord import replace
from loopkit.errors import LoopkitError
from loopkit.escalation.sender import channel_for
from loopkit.home import workspace_id
from loopkit.log import get_logger
from loopkit.message import FollowUp, fold
from loopkit.redact import Redactor
from loopkit.requests.models import DeliveryAttempt, Resolution
from loopkit.requests.reading import told_back

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    from loopkit.answering.service import Answering
    from loopkit.channels import Channel
    from loopkit.config import Config
    from loopkit.config.people import Person
    from loopkit.requests.record import Request
    from loopkit.requests.store import RequestStore

    ChannelFor = Callable[[Config, str, Person | None], Channel]

log = get_logger("loopkit.answer")

PUSHED = ("ntfy",)  # channels whose message cannot be edited: a follow-up push instead
PAGED = "pagerduty"
OUTCOME = "outcome"
ACKNOWLEDGE = "acknowledge"


def ending(record: Request) -> str:
    """How ``record`` ended, for someone who was asked and did not end it."""
    res = record.resolution or Resolution()
    if record.status == "expired":
        minutes = (record.timeout_default or {}).get("after_minutes")
        took = f"loopkit took the default ({res.action})"
        return f"expired after {minutes} min with no answer; {took}"
    if record.status == "dismissed":
        return f"dismissed by {res.by or 'someone'}: nobody is to answer it"
    if res.outcome == "unblocked":
        return f"unblocked by hand by {res.by or 'someone'} ({res.via})"
    label = next((o.label for o in record.options if o.value == res.chosen_option), None)
    what = label or fold(str(res.parsed_decision or ""), 80)
    return f"answered by {res.by or 'someone'} via {res.via or '?'}: {what}"


def _answered_by(record: Request, person: str | None, channel: str) -> bool:
    res = record.resolution
    if res is None or record.status != "resolved" or res.via != channel:
        return False
    return person is None or (res.by or "").lower() == person.lower()


class FollowUps:
    """The answering service's teller for follow-ups (see the module). ``channel_for``
    builds a channel for a person (the seam tests use)."""

    via = "follow-ups"

    def __init__(self, answering: Answering, *, channel_for: ChannelFor = channel_for) -> None:
        self.answering = answering
        self.channel_for = channel_for
        self._lock = threading.Lock()
        answering.add_teller(self)

    # --- where -----------------------------------------------------------------------------

    def _place(self, request_id: str) -> tuple[RequestStore, Config] | None:
        try:
            store = self.answering.holder(request_id)
            if store is None:
                return None  # another machine's: its own processes tell its people
            return store, self.answering.stores.place(store.workspace.root).config
        except (LoopkitError, OSError):
            return None

    @staticmethod
    def _reached(record: Request, channels: tuple[str, ...]) -> list[tuple[str, str | None]]:
        """(channel, person) of every message of the block that arrived on ``channels``."""
        found: list[tuple[str, str | None]] = []
        for entry in record.delivery:
            if not entry.is_send or entry.reminder or entry.ok is not True:
                continue
            key = (str(entry.channel), entry.person)
            if entry.channel in channels and key not in found:
                found.append(key)
        return found

    # --- telling ---------------------------------------------------------------------------

    def show_outcome(self, record: Request) -> None:
        """Tell each person the block reached on ntfy how it ended, and resolve its
        PagerDuty incident — each once."""
        if record.is_open:
            return
        place = self._place(record.request_id)
        if place is None:
            return
        store, config = place
        for channel, person in self._reached(record, (*PUSHED, PAGED)):
            if not self._claim(store, record.request_id, channel, person, OUTCOME):
                continue
            if channel == PAGED:
                outcome = self._page(config, "resolve", record.request_id)
            else:
                said = (
                    f"recorded: {told_back(record)}"
                    if _answered_by(record, person, channel)
                    else ending(record)
                )
                outcome = self._push(config, store, record, channel, person, said)
            self._finish(store, record.request_id, channel, person, OUTCOME, config, outcome)

    def opened(self, request_id: str) -> None:
        """Someone opened the request in the inbox: its PagerDuty incident is acknowledged
        (once; an ended request's incident is resolved instead, by :meth:`show_outcome`)."""
        place = self._place(request_id)
        if place is None:
            return
        store, config = place
        try:
            record = store.load(request_id)
        except LoopkitError:
            return
        if not record.is_open or not self._reached(record, (PAGED,)):
            return
        if self._claim(store, request_id, PAGED, None, ACKNOWLEDGE, any_person=True):
            outcome = self._page(config, "acknowledge", request_id)
            self._finish(store, request_id, PAGED, None, ACKNOWLEDGE, config, outcome)

    def late(self, record: Request, person: str | None) -> None:
        """``person`` answered on ntfy after the question was answered: they are told who
        was first (every time: nothing is claimed)."""
        place = self._place(record.request_id)
        if place is None or record.is_open:
            return
        store, config = place
        said = f"already answered — {ending(record)}; your tap changed nothing"
        outcome = self._push(config, store, record, "ntfy", person, said)
        if not outcome.ok:
            why = f"ntfy: cannot tell {person or 'the tapper'}: {outcome.error}"
            log.warning("late_not_told", request_id=record.request_id, msg=why)

    # --- the parts -------------------------------------------------------------------------

    def _push(
        self,
        config: Config,
        store: RequestStore,
        record: Request,
        channel: str,
        person: str | None,
        said: str,
    ) -> Outcome:
        who = find(config.escalation.people, person) if person else None
        if person and who is None:
            return Outcome(ok=False, status="error", error=f"{person} is no longer listed")
        link = None
        if config.channels.inbox_url:
            key = workspace_id(store.workspace.root)
            link = f"{config.channels.inbox_url}/r/{key}/{record.request_id}"
        note = FollowUp(
            request_id=record.request_id,
            repo=store.workspace.repo_name(),
            said=said,
            person=person,
            link=link,
            question=record.prompt,
        )
        try:
            return self.channel_for(config, channel, who).send(note)
        except Exception as exc:  # a channel's bug must not lose the others' follow-ups
            return Outcome(ok=False, status="error", error=f"{type(exc).__name__}: {exc}")

    def _page(
        self, config: Config, action: Literal["acknowledge", "resolve"], request_id: str
    ) -> Outcome:
        channel = self.channel_for(config, PAGED, None)
        if not isinstance(channel, PagerDutyChannel):
            return Outcome(ok=False, status="error", error="pagerduty: not the Events API channel")
        return channel.event(action, request_id)

    def _claim(
        self,
        store: RequestStore,
        request_id: str,
        channel: str,
        person: str | None,
        what: str,
        *,
        any_person: bool = False,
    ) -> bool:
        """Take the follow-up ``what`` for (channel, person): False when it was taken."""
        taken = False

        def claim(record: Request) -> bool:
            nonlocal taken
            for entry in record.delivery:
                if (
                    entry.followup == what
                    and entry.channel == channel
                    and (any_person or entry.person == person)
                ):
                    taken = True
                    return False
            attempt = DeliveryAttempt(
                channel=channel, at=clock.iso_millis(), person=person, followup=what
            )
            record.delivery.append(attempt)
            return True

        with self._lock:
            try:
                store.update(request_id, claim)
            except (LoopkitError, OSError) as exc:
                log.warning("followup_unclaimed", request_id=request_id, msg=f"{exc}")
                return False
        return not taken

    def _finish(
        self,
        store: RequestStore,
        request_id: str,
        channel: str,
        person: str | None,
        what: str,
        config: Config,
        outcome: Outcome,
    ) -> None:
        error = Redactor(config.channels.secrets()).text(outcome.error) if outcome.error else None

        def finish(record: Request) -> bool:
            for index in range(len(record.delivery) - 1, -1, -1):
                entry = record.delivery[index]
                if (entry.followup, entry.channel, entry.person) == (what, channel, person):
                    record.delivery[index] = replace(
                        entry, ok=bool(outcome.ok), status=outcome.status, error=error,
                        message_id=outcome.message_id,
                    )  # fmt: skip
                    return True
            return False

        try:
            store.update(request_id, finish)
        except (LoopkitError, OSError) as exc:
            log.warning("followup_unrecorded", request_id=request_id, msg=f"{exc}")
        to = f" to {person}" if person else ""
        if outcome.ok:
            told = f"{channel}: told{to} how request {request_id} ended ({what})"
            log.info("followup", request_id=request_id, channel=channel, person=person, msg=told)
        else:
            log.warning("followup_failed", request_id=request_id, channel=channel,
                        msg=f"{channel}: {what} not sent{to}: {error}")  # fmt: skip
