"""``loopkit gate -- CMD…``: run one exact command only after a human approved that command.

The command's argv and working folder are hashed (SHA-256) into the approval request; only
an approval of that same hash runs it, and an approval is used once. A changed command (a
different argument, another folder) is a new request. While the request is open the gate
exits 2 (blocked) — in a loop the agent's turn ends and the next turn's ``gate`` finds the
answer — or, with ``wait``, it waits for the answer itself.

Its exit code alone cannot tell every outcome apart — 2 is "waiting" and also a command
that ran and exited 2 — so every result also names its :data:`GateState`, which
``loopkit gate --json`` prints for scripts.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
from typing import Literal

from loopkit import clock
from loopkit.datarecord import record
from loopkit.errors import EXIT_ABORTED, EXIT_BLOCKED, BadInput
from loopkit.escalation.escalator import Escalator
from loopkit.message import clean, fold
from loopkit.redact import mask_command
from loopkit.requests.answer import APPROVAL_OPTIONS, outcome_of
from loopkit.requests.models import Kind, Resolution
from loopkit.requests.outcome import wait_for
from loopkit.requests.record import Request, new_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from loopkit.config import Config
    from loopkit.requests.store import RequestStore


def command_hash(argv: Sequence[str], cwd: str) -> str:
    return hashlib.sha256(
        json.dumps({"argv": list(argv), "cwd": cwd}, ensure_ascii=False).encode()
    ).hexdigest()


GateState = Literal["waiting", "rejected", "ran", "cannot_run"]
"""What happened to the command: ``waiting`` (not run: no usable approval yet — asked now,
still open, or its one use just taken by another call; call again), ``rejected`` (not run:
rejected, changes requested, expired or lifted without an answer), ``ran`` (approved and
run: the exit code is the command's own), ``cannot_run`` (approved, but it could not be
started: not found or not executable)."""


@record(frozen=True, slots=True)
class GateResult:
    state: GateState
    exit_code: int
    record: Request
    message: str

    def to_dict(self) -> dict[str, object]:
        """What ``loopkit gate --json`` prints."""
        return {
            "state": self.state,
            "exit": self.exit_code,
            "request_id": self.record.request_id,
            "message": self.message,
        }


def _shown(argv: Sequence[str]) -> list[str]:
    """``argv`` as the human sees it: secrets masked, control characters escaped."""
    return [clean(word) for word in mask_command(list(argv))]


def _prompt(argv: Sequence[str]) -> str:
    shown = shlex.join(_shown(argv))
    room = 120 - len("Approve running ``?")
    return f"Approve running `{fold(shown, room)}`?"


def approval_request(
    config: Config,
    *,
    key: str,
    prompt: str,
    situation: str,
    policy: str,
    trigger: str,
    attempted: str,
    binding: dict[str, Any],
) -> Request:
    """A new approval request bound to one exact action (``binding``: what is shown, masked,
    and its ``sha256``): ``gate``'s, and the Claude Code hook's. Approvals keep ``abort`` on
    timeout: nothing irreversible runs on a silence."""
    return Request(
        request_id=new_id(),
        prompt=prompt,
        request_key=key,
        kind=Kind.APPROVAL,
        situation=situation,
        policy=policy,
        options=list(APPROVAL_OPTIONS),
        timeout_default={"after_minutes": config.escalation.timeout_minutes, "action": "abort"},
        trigger=trigger,
        attempted=[attempted],
        gate=binding,
    )


def _new_request(config: Config, argv: Sequence[str], cwd: str, digest: str) -> Request:
    # What is shown and stored has its secrets masked; the hash is over the real argv. The
    # digest stays in the record only: beside a masked argv it would let anyone reading the
    # message guess a short secret back.
    shown = _shown(argv)
    return approval_request(
        config,
        key=f"gate:{digest}",
        prompt=_prompt(argv),
        situation=f"Command: {shlex.join(shown)}\nFolder: {cwd}",
        policy="loopkit gate: this exact command runs only after its approval",
        trigger="gate",
        attempted="nothing: the command has not run; it waits for this approval",
        binding={"argv": shown, "cwd": cwd, "sha256": digest},
    )


def _latest(store: RequestStore, key: str) -> Request | None:
    found = [
        r
        for _, r in store.all()
        if isinstance(r, Request) and r.request_key == key and not r.consumed_at
    ]
    return found[-1] if found else None


def approval(
    key: str,
    make: Callable[[], Request],
    *,
    escalator: Escalator,
    wait: bool = False,
    timeout: float | None = None,
) -> Request:
    """The approval request bound to ``key`` (``gate:<sha256>``): the latest one not used
    yet, or a new one from ``make()``, raised as a block of its own and sent. With ``wait``,
    waits for its answer (``timeout`` seconds at most). Shared by ``gate`` and the Claude
    Code hook, so both bind, raise and consume an approval the same way."""
    store = escalator.store
    deliver = False
    with store.locked():
        record = _latest(store, key)
        if record is None:
            record = make()
            placed = escalator.place(record, own=True)
            deliver = placed.joined is None
        elif record.is_open and escalator.awaits_own_block(record):
            placed = escalator.place(record, persisted=True, own=True)  # announce it now
            deliver = placed.joined is None
    if deliver:
        escalator.deliver(record)
    if record.is_open and wait:
        record = wait_for(store, record.request_id, timeout=timeout)
    return record


@record(frozen=True, slots=True)
class Verdict:
    """What an approval allows: ``approved`` (once), ``open`` (no answer yet), ``used``
    (its one use is gone) or ``denied`` (any other ending)."""

    state: Literal["approved", "open", "used", "denied"]
    record: Request
    reason: str


def consume(store: RequestStore, record: Request, digest: str) -> Verdict:
    """Use ``record``'s answer: allowed once, for the call with ``digest`` only."""
    if record.is_open:
        return Verdict("open", record, f"waiting for approval: requests/{record.request_id}.json")
    used_before = False

    def use(fresh: Request) -> bool:
        nonlocal used_before
        used_before = fresh.consumed_at is not None
        if not used_before:
            fresh.consumed_at = clock.iso_seconds()
        return not used_before

    fresh = store.update(record.request_id, use)
    if used_before:
        return Verdict("used", fresh, "this approval was already used; ask again")
    outcome = outcome_of(fresh)
    res = fresh.resolution or Resolution()
    if outcome == "approved" and (fresh.gate or {}).get("sha256") == digest:
        return Verdict("approved", fresh, f"approved by {res.by} via {res.via}")
    reason = res.reason or res.note
    why = f": {reason}" if reason else ""
    return Verdict("denied", fresh, f"not approved ({outcome}){why}")


def gate(
    config: Config,
    argv: Sequence[str],
    *,
    cwd: str,
    wait: bool = False,
    timeout: float | None = None,
    escalator: Escalator | None = None,
    store: RequestStore | None = None,
    stdout: int | None = None,
) -> GateResult:
    """Ask for, or use, the approval of ``argv`` run in ``cwd``, and run it once approved.
    ``stdout``: where the command's standard output goes (a file descriptor; default: this
    process's own)."""
    if not argv:
        raise BadInput("no command given: loopkit gate -- COMMAND [ARGS…]")
    escalator = escalator or Escalator(config, store=store)
    digest = command_hash(argv, cwd)
    record = approval(
        f"gate:{digest}",
        lambda: _new_request(config, argv, cwd, digest),
        escalator=escalator,
        wait=wait,
        timeout=timeout,
    )
    verdict = consume(escalator.store, record, digest)
    if verdict.state in ("open", "used"):
        return GateResult("waiting", EXIT_BLOCKED, verdict.record, verdict.reason)
    if verdict.state == "denied":
        return GateResult("rejected", EXIT_ABORTED, verdict.record, verdict.reason + "; not run")
    try:
        code = subprocess.call(list(argv), cwd=cwd, stdout=stdout)
    except OSError as exc:
        why = f"approved, but it cannot run: {exc.strerror}: {argv[0]!r}"
        return GateResult("cannot_run", 127, verdict.record, why)
    return GateResult("ran", code, verdict.record, f"approved; ran it, exit {code}")
