"""The events the audit trail keeps (SPEC section 30): a name set and nothing else, so that
:mod:`loopkit.log` can tell an audited event from the others without importing the trail."""

from __future__ import annotations

AUDITED = frozenset({
    # a question asked: a block raised (escalate, ask --block, a gate, the supervisor's own),
    # one joined to a standing block, an agent's hand-written block adopted or restored, a
    # request asked without a block
    "escalated", "escalation_joined", "adopted", "block_restored", "block_asked", "asked",
    # how it ended: an answer (any surface, this machine or — applied here — another), a
    # dismissal, a block lifted by hand, a timeout
    "answer", "dismiss", "lifted", "timeout", "fleet_applied", "fleet_two_answers",
    # the gate: its decision on a call, a standing rule used, added, removed
    "gate_decision", "gate_rule_used", "gate_rule_added", "gate_rule_removed",
    # policy: a routine question answered by [[policy.answers]], a human's override of one
    "policy_answer", "policy_override",
})  # fmt: skip
