"""``rules`` and ``audit``: the standing approvals a human gave, and the audit trail of what
was let through (SPEC section 30)."""

from __future__ import annotations

import click

from loopkit.cli.body import runs, runs_unless_subcommand

TYPE_CHECKING = False


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one array).")
@click.pass_context
@runs_unless_subcommand("loopkit.commands.records:list_rules")
def rules() -> None:
    """List the standing approvals ("Allow always here") of .loopkit/allow.toml, numbered.

    A command rule lets that exact command through in that folder; a files rule, the file
    tools' writes to paths matching its globs. `loopkit rules rm N` removes rule N.
    """


@rules.command("rm")
@click.argument("number", type=click.IntRange(min=1))
@click.pass_obj
@runs("loopkit.commands.records:remove_rule")
def rules_rm() -> None:
    """Remove standing approval N (as `loopkit rules` numbers them): the next such call is
    asked again. Exit 65 if there is no rule N."""


@click.group()
def audit() -> None:
    """The audit trail of .loopkit/audit.jsonl: `loopkit audit verify` checks it.

    One hash-chained line per question, answer, gate decision, rule use and policy answer.
    """


@audit.command("verify")
@click.pass_obj
@runs("loopkit.commands.records:verify")
def audit_verify() -> None:
    """Check the chain: exit 0 when every line is as written, 65 naming the first edited,
    dropped or reordered line (`audit.jsonl:N: …`). A last line cut short by a crash is
    said as such, and is not tampering."""
