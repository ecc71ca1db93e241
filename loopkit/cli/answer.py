"""``reply``, ``unblock`` and ``dismiss``: a human's answer, from a shell (never an agent's),
and closing a request nobody will answer."""

from __future__ import annotations

import click

from loopkit.cli.body import runs

TYPE_CHECKING = False


@click.command()
@click.option("--request-id", "--request_id", "request_id", required=True, help="Which request.")
@click.option("--reply", "-r", required=True, help="The human's reply, verbatim.")
@click.option("--expected-updated-at", metavar="TS", help="Refuse (exit 4) if it changed since.")
@click.option("--by", default=None, help="Who answers (default: $LOOPKIT_HUMAN or your login).")
@click.pass_obj
@runs("loopkit.commands.answer:reply")
def reply() -> None:
    """Record a human's answer to a request and print the decision as JSON.

    Matching: an option's letter or number (with words after it: a note), its label, a
    unique label prefix, its value or an alias, "work on it" / "your call" for the
    recommendation, a typo; anything else — a question back, two options at once, a
    negation — is kept as free text (an approval on a condition: changes requested), never
    a guess. How the reply was read is told on stderr ("→ B) Skip the task (letter B)").
    Exit 4 if the request was already answered (the first answer stands), 66 if there is no
    such request, 65 if its record is corrupt, 77 from inside a supervised agent's session.
    """


@click.command()
@click.option("--reply", "-r", help="Answer the open block's question (else: no answer).")
@click.option("--by", default=None, help="Who answers (default: $LOOPKIT_HUMAN or your login).")
@click.pass_obj
@runs("loopkit.commands.answer:unblock")
def unblock() -> None:
    """Resolve the open block's request and remove BLOCKED.md.

    With --reply the answer is parsed and recorded like `loopkit reply`, and how it was
    read is told on stderr (a running supervisor hands it to the next agent run as
    LOOPKIT_DECISION); without, the request
    is resolved as "unblocked by hand". Not blocked: exit 0, nothing to do (with --reply:
    66). Exit 4 if the request was already answered, 77 from inside a supervised agent's
    session.
    """


@click.command()
@click.argument("request_id")
@click.option("--reason", metavar="TEXT", help="Why nobody will answer it (kept on the record).")
@click.option("--by", default=None, help="Who dismisses (default: $LOOPKIT_HUMAN or your login).")
@click.pass_obj
@runs("loopkit.commands.answer:dismiss")
def dismiss() -> None:
    """Close an open request nobody will answer (status dismissed), from any folder.

    A dismissal is never an answer: nothing is chosen or approved, `requests wait` exits 3,
    a gate does not run its command, no agent run gets a decision. The request's own
    BLOCKED.md is removed (never another's, never your own pause). Exit 4 if it was closed
    already (the first ending stands), 66 if there is no such request, 77 from inside a
    supervised agent's session.
    """
