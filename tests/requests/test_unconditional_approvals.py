"""SPEC §28, an approval is unconditional or it is not one.

For a P0 request — a gate's, a hook's gated call, Claude Code's permission dialog, an ask
found P0 (``--irreversible``) — only a yes word, the approve label or value, or its letter or
number, with at most punctuation or 👍/✅ beside it, approves (or, for a P0 question, picks
the option); any other words are a rejection or free text, told back "not approved: reply
`approve` alone to approve". For other requests words after a yes are a note, unless they
carry a contrast, a condition, an alternative or a negation. Hypothesis builds the
qualified approvals from each yes form and words a human (or an agent) might add."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopkit.requests.answer import (
    APPROVAL_OPTIONS,
    QUESTION_OPTIONS,
    REVIEW_OPTIONS,
    apply_reply,
    parse_for,
)
from loopkit.requests.models import Option
from loopkit.requests.reading import told_back
from loopkit.requests.record import Request
from loopkit.requests.replies import YES_WORDS

GATE = {"argv": ["rm", "-rf", "data"], "cwd": "/srv/app", "sha256": "0" * 64}
PERMISSION = [Option("Allow", "approved"), Option("Deny", "rejected"),
              Option("Always allow", "always")]  # fmt: skip


def gated() -> Request:
    return Request(request_id="g1", prompt="Approve running `rm -rf data`?", kind="approval",
                   options=list(APPROVAL_OPTIONS), gate=dict(GATE))  # fmt: skip


def irreversible(kind: str = "approval") -> Request:
    options = {"approval": APPROVAL_OPTIONS, "review": REVIEW_OPTIONS}.get(kind, QUESTION_OPTIONS)
    record = Request(request_id="p1", prompt="Drop the orders table?", options=list(options))
    record.kind = kind  # type: ignore[assignment]
    record.needs_human = {"p0": True, "irreversible": True}
    return record


def permission() -> Request:
    record = Request(request_id="c1", prompt="Claude asks permission: `rm -rf data`",
                     kind="approval", options=list(PERMISSION))  # fmt: skip
    record.gate = dict(GATE, tool="Bash")
    return record


def plain_approval() -> Request:
    return Request(request_id="a1", prompt="Merge it?", kind="approval",
                   options=list(APPROVAL_OPTIONS))  # fmt: skip


def outcome(record: Request, reply: str) -> str | None:
    decision, extra = parse_for(record, reply)
    if record.kind == "question":
        return decision.chosen_option
    return str(extra["outcome"])


THE_ISSUES = [
    "approve the rollback instead", "approve in dry-run mode", "approve nothing", "approve 0",
    "approve: false",
]  # fmt: skip
# Approving forms, alone: a P0 request takes each of them.
BARE = ["yes", "y", "Y", "approve", "Approve", "APPROVE", "approved", "ok", "OK", "lgtm", "👍",
        "✅", "A", "a", "a)", "1", "1."]  # fmt: skip
DECORATED = ["{}!", "{}.", "{} 👍", "{} ✅", "  {}  ", "{}!!", "“{}”", "({})", "{} 👍🏽", "👍 {}",
             "{}\u200b"]  # fmt: skip


@pytest.mark.parametrize("make", [gated, irreversible, permission])
@pytest.mark.parametrize("reply", THE_ISSUES)
def test_the_issues_qualified_approvals_approve_nothing(make: object, reply: str) -> None:
    record = make()  # type: ignore[operator]
    assert outcome(record, reply) not in ("approved", "always"), reply


@pytest.mark.parametrize("reply", BARE)
@pytest.mark.parametrize("form", ["{}", *DECORATED])
def test_a_p0_approval_takes_a_yes_alone_with_punctuation_or_a_thumb(reply: str, form: str) -> None:
    if form != "{}" and reply in ("a)", "1."):
        return  # an index with a closing mark is already decorated
    assert outcome(gated(), form.format(reply)) == "approved", form.format(reply)


def test_a_permission_dialogs_own_labels_alone_decide_it() -> None:
    record = permission()
    assert outcome(record, "Allow") == "approved"
    assert outcome(record, "allow!") == "approved"
    assert outcome(record, "Always allow") == "always"
    assert outcome(record, "C") == "always"
    for reply in ("allow in dry-run mode", "always allow, but not rm", "allow it",
                  "allow: false", "allow 0", "always allow it"):  # fmt: skip
        assert outcome(record, reply) not in ("approved", "always"), reply


def test_a_p0_approval_still_takes_a_rejection_with_its_reason() -> None:
    _, extra = parse_for(gated(), "reject: it deletes the customer data")
    assert extra["outcome"] == "rejected" and extra["reason"] == "it deletes the customer data"
    assert parse_for(gated(), "no, take a backup first")[1]["outcome"] == "rejected"
    assert parse_for(gated(), "B, too risky")[1]["outcome"] == "rejected"


def test_a_typo_of_approve_does_not_approve_a_p0_request_but_does_another() -> None:
    assert outcome(gated(), "aprove") != "approved"
    assert outcome(plain_approval(), "aprove") == "approved"


def test_a_p0_question_takes_its_option_alone() -> None:
    record = irreversible("question")  # ask --irreversible: Proceed / Skip / Abort
    assert outcome(record, "A") == "proceed"
    assert outcome(record, "proceed!") == "proceed"
    assert outcome(record, "Proceed") == "proceed"
    for reply in ("proceed in dry-run mode", "A, but only the staging table", "proceed 0",
                  "A - scratch that", "proc", "procede"):  # fmt: skip
        assert outcome(record, reply) is None, reply


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        ("approve the rollback instead",
         "→ not approved: reply `approve` alone to approve; your words are kept as the reason "
         "(changes requested)"),
        ("approve", "→ approved: A) Approve (its label)"),
        ("reject: too risky", '→ rejected: B) Reject (its label); reason: "too risky"'),
    ],
)  # fmt: skip
def test_a_qualified_p0_approval_is_told_how_to_approve(reply: str, told: str) -> None:
    record = gated()
    apply_reply(record, reply, by="ana", via="cli")
    assert told_back(record) == told


def test_a_p0_question_free_text_is_told_how_to_choose() -> None:
    record = irreversible("question")
    apply_reply(record, "proceed in dry-run mode", by="ana", via="cli")
    assert told_back(record) == (
        "→ not chosen: an irreversible choice takes the option alone (its letter or label); "
        "kept as free text; the agent gets it as your answer, in your words"
    )


# Words after a yes, made of what a human adds: a qualifier, a condition, an alternative, a
# negation, a value that says no; or nothing in particular (any words at all, for P0).
QUALIFIERS = [
    "instead", "but", "except", "only", "if", "unless", "rather", "not", "no", "nothing",
    "never", "none", "false", "0",
]  # fmt: skip
FILLERS = ["the rollback", "in dry-run mode", "the staging table", "prod", "it", "for now",
           "tomorrow", "please", "run it", "go", "mode", "table", "data"]  # fmt: skip
SEPARATORS = [" ", ", ", ": ", " - ", " — ", "; ", "\n", ". ", "... ", " (", "! "]
# What approves on its own: a yes word, the approve label or value, its letter or number —
# never "words beside a yes" (``👍 1`` is option 1 with a thumbs-up).
APPROVING = YES_WORDS | {"a", "1", "c", "3", "allow", "always", "approved", "approve"}


@st.composite
def words_after(draw: st.DrawFn, qualifier: bool) -> str:
    parts = draw(st.lists(st.sampled_from(FILLERS), max_size=3))
    if qualifier:
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(QUALIFIERS)))
    elif not parts or draw(st.booleans()):
        extra = st.text(string.ascii_letters + string.digits, min_size=1, max_size=8)
        parts.append(draw(extra.filter(lambda t: t.casefold() not in APPROVING)))
    case = draw(st.sampled_from([str, str.upper, str.capitalize]))
    return case(" ".join(parts))


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from([gated, irreversible, permission]),
    st.sampled_from([*BARE, "Allow", "Always allow"]),
    st.sampled_from(SEPARATORS),
    st.booleans(),
    st.data(),
)
def test_any_words_after_a_yes_leave_a_p0_request_unapproved(
    make: object, yes: str, separator: str, qualifier: bool, data: st.DataObject
) -> None:
    record = make()  # type: ignore[operator]
    words = data.draw(words_after(qualifier))
    for reply in (f"{yes}{separator}{words}", f"{words}{separator}{yes}"):
        assert outcome(record, reply) not in ("approved", "always"), reply


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["approve", "yes", "ok", "lgtm", "A", "Approve", "approved"]),
       st.sampled_from(SEPARATORS), st.data())  # fmt: skip
def test_a_qualifier_after_a_yes_leaves_any_approval_unapproved(
    yes: str, separator: str, data: st.DataObject
) -> None:
    words = data.draw(words_after(True))
    for record in (plain_approval(), gated()):
        reply = f"{yes}{separator}{words}"
        assert outcome(record, reply) != "approved", reply


@pytest.mark.parametrize(
    ("reply", "note"),
    [("approve: the backup is done", "the backup is done"), ("ok, go ahead", "go ahead"),
     ("A - looks good", "looks good"), ("yes, ship it", "ship it")],
)  # fmt: skip
def test_plain_words_after_a_yes_are_a_note_where_it_is_not_p0(reply: str, note: str) -> None:
    _, extra = parse_for(plain_approval(), reply)
    assert extra["outcome"] == "approved" and extra["reason"] == note
    assert parse_for(gated(), reply)[1]["outcome"] == "changes_requested"


@pytest.mark.parametrize(
    "reply",
    ["yes, but only for staff", "yes, unless it is Friday", "yes, not now", "yes, nothing else",
     "yes if the tests pass", "yes - rather not", "yes, never on prod", "A, except staging",
     "yes — no", "yes, instead keep it off"],
)  # fmt: skip
def test_a_qualified_yes_to_a_question_is_free_text(reply: str) -> None:
    record = Request(request_id="q1", prompt="Enable it for every user?",
                     options=[Option("Yes", "yes"), Option("No", "no")])  # fmt: skip
    decision, _ = parse_for(record, reply)
    assert decision.chosen_option is None and decision.free_text == reply
