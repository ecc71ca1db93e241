"""The explicit command table: each entry names its command, and ``--help`` lists them all."""

from __future__ import annotations

import click
from click.testing import CliRunner

from loopkit.cli.app import COMMANDS, load_command, root


def test_each_entry_names_its_command_and_its_help() -> None:
    for name, (_, short_help) in COMMANDS.items():
        command = load_command(name)
        assert isinstance(command, click.Command), name
        assert command.name == name
        first = (command.help or "").partition("\n\n")[0]
        assert " ".join(first.split()) == short_help, name


def test_an_unknown_name_is_no_command() -> None:
    assert load_command("nosuch") is None


def test_help_lists_every_command_as_click_would() -> None:
    listed = CliRunner().invoke(root, ["--help"]).output
    eager = click.Group(
        "loopkit",
        commands=[load_command(name) for name in COMMANDS],
        context_settings={"max_content_width": 100},
    )
    expected = CliRunner().invoke(eager, ["--help"]).output
    assert listed.split("Commands:")[1] == expected.split("Commands:")[1]
