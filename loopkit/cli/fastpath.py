"""The everyday command lines, answered without click (SPEC §20).

``import click`` alone costs about twice ``python -c pass``, so the commands a human or an
agent runs all day — ``status``, ``reply``, ``unblock``, ``requests``, ``inbox``,
``escalate``, ``ask``, ``ps`` and ``loopkit --help`` — are parsed here and run straight from their
bodies in :mod:`loopkit.commands`, which the click commands call too.

The contract, in the order :func:`parse` reads a command line:

1. The root's options (``-C``/``--workspace DIR``, ``-v``/``--verbose``), then the command's
   name, one of :data:`COMMANDS`; then that command's options, in any order:
   ``--opt value``, ``--opt=value``, ``-o value``, ``-ovalue``; a repeatable option as often
   as given (a tuple); another option given twice: the last one, as click does.
2. Every value is checked as click checks it: a choice among click's choices, a number as
   plain decimal digits within click's range, ``-C`` an existing, readable folder.
3. Anything else is never guessed at: an unknown option or command, a command's
   ``-h``/``--help``, ``--version``, a missing required option, a value that starts with
   ``-`` (click may read it as a value or as an option), ``--``, an argument, a flag given a
   value, short options run together. :func:`parse` returns None and click answers, with
   its exact message and exit (64 for a usage error).

What :func:`parse` returns, click's parse of the same line returns too — the same command
and parameters, types and defaults included: the table is click's own declaration, written
down by docs/generate.py (:mod:`~loopkit.cli.commandtable`, ``EVERYDAY``: every command whose
body is declared with ``@runs`` and that takes options only), and tests/cli/test_fastpath.py
generates the lines and holds both to it. The root's own ``--help`` (after the root's
options, if any) is click's text, rendered when the code changes (:mod:`loopkit.cli.roothelp`,
written by ``docs/generate.py``) for the widths a terminal usually has; for any other width
click renders it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing: ~2 ms of a start-up that has none to spare
if TYPE_CHECKING:
    from collections.abc import Callable


class Option:
    """One option as click declares it: its names, its parameter's name, what it takes
    (``flag``, ``one`` value or ``many``), whether it is required, its default, and for a
    value the check click makes (:func:`_checker`: a choice, :func:`_number`)."""

    __slots__ = ("check", "default", "dest", "names", "required", "takes")

    def __init__(
        self,
        takes: str,
        *names: str,
        dest: str | None = None,
        required: bool = False,
        default: object = None,
        check: Callable[[str], object] | None = None,
    ) -> None:
        self.takes, self.names = takes, names
        self.dest = dest or next(n for n in names if n.startswith("--"))[2:].replace("-", "_")
        self.required, self.check = required, check
        self.default = {"flag": False, "many": ()}.get(takes, default)


class _Refused(Exception):
    """A value click might read otherwise: the line goes to click."""


def _number(
    low: float, high: float | None = None, *, low_open: bool = False
) -> Callable[[str], object]:
    """click.FloatRange(low, high, min_open=low_open), for plain decimals: ``0.5``, ``30``."""

    def check(value: str) -> float:
        digits = value.replace(".", "", 1)
        if not (digits.isascii() and digits.isdigit()):
            raise _Refused  # a sign, an exponent, inf, nan, spaces: click's to read
        number = float(value)
        if number < low or (low_open and number == low) or (high is not None and number > high):
            raise _Refused
        return number

    return check


def _checker(check: tuple[object, ...] | None) -> Callable[[str], object] | None:
    """The check of a value the command table names: click.Choice's, click.FloatRange's
    (``-C``'s existing folder is :func:`_folder`'s, once the line is read)."""
    if check is None or check[0] == "folder":
        return None
    if check[0] == "choice":
        choices = check[1]
        assert isinstance(choices, tuple)

        def chosen(value: str) -> str:
            if value not in choices:
                raise _Refused
            return value

        return chosen
    _, low, high, low_open = check
    assert isinstance(low, (int, float)) and (high is None or isinstance(high, (int, float)))
    return _number(low, high, low_open=bool(low_open))


def _option(spec: tuple[object, ...]) -> Option:
    """An option as the command table writes it: (takes, names, dest, required, default,
    check)."""
    takes, names, dest, required, default, check = spec
    assert isinstance(takes, str) and isinstance(names, tuple) and isinstance(dest, str)
    assert check is None or isinstance(check, tuple)
    return Option(takes, *map(str, names), dest=dest, required=bool(required), default=default,
                  check=_checker(check))  # fmt: skip


def _commands() -> dict[str, tuple[str, tuple[Option, ...]]]:
    """The commands answered here: name → ("module:function" of its body, its options), from
    the click declarations as docs/generate.py wrote them down
    (:mod:`~loopkit.cli.commandtable`)."""
    from loopkit.cli.commandtable import EVERYDAY

    return {
        name: (body, tuple(_option(spec) for spec in options))
        for name, (body, options) in EVERYDAY.items()
    }


def _root() -> tuple[Option, ...]:
    """The group's own options (``-C``/``--workspace``, checked by :func:`_folder`; ``-v``)."""
    from loopkit.cli.commandtable import ROOT

    return tuple(_option(spec) for spec in ROOT)


COMMANDS = _commands()
ROOT = _root()


class Parsed:
    """A command line :func:`parse` is sure of: the root's parameters, the command, its."""

    __slots__ = ("command", "params", "verbose", "workspace")

    def __init__(
        self, workspace: Path | None, verbose: bool, command: str, params: dict[str, object]
    ) -> None:
        self.workspace, self.verbose, self.command, self.params = (
            workspace, verbose, command, params,
        )  # fmt: skip


def _options(
    args: list[str], options: tuple[Option, ...], *, until_argument: bool
) -> tuple[dict[str, object], list[str]]:
    """The options at the head of ``args`` (all of ``args`` unless ``until_argument``) as
    click's parser reads them, and what follows; :class:`_Refused` when unsure."""
    known = {name: option for option in options for name in option.names}
    given: dict[str, object] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            if until_argument and arg != "--":
                break
            raise _Refused
        i += 1
        value: str | None
        if arg.startswith("--"):
            name, equals, attached = arg.partition("=")
            value = attached if equals else None
        else:
            name, value = arg[:2], arg[2:] or None  # -qVALUE (click: even -q=V is "=V")
        option = known.get(name)
        if option is None:
            raise _Refused
        if option.takes == "flag":
            if value is not None:
                raise _Refused  # click: "does not take a value", or short flags run together
            given[option.dest] = True
            continue
        if value is None:
            if i == len(args):
                raise _Refused  # click: "requires an argument"
            value, i = args[i], i + 1
        if value.startswith("-"):
            raise _Refused
        checked = option.check(value) if option.check else value
        if option.takes == "many":
            given[option.dest] = (*given.get(option.dest, ()), checked)  # type: ignore[misc]
        else:
            given[option.dest] = checked
    params: dict[str, object] = {}
    for option in options:
        if option.dest not in given and option.required:
            raise _Refused  # click: "Missing option"
        params[option.dest] = given.get(option.dest, option.default)
    return params, args[i:]


def _folder(value: object) -> Path | None:
    """``-C``: click.Path(exists=True, file_okay=False) accepts a readable folder."""
    if value is None:
        return None
    assert isinstance(value, str)
    if not (os.path.isdir(value) and os.access(value, os.R_OK)):
        raise _Refused
    return Path(value)


def parse(args: list[str]) -> Parsed | None:
    """The command line if it is one of :data:`COMMANDS`' well-formed lines, else None."""
    try:
        root, rest = _options(args, ROOT, until_argument=True)
        if not rest or rest[0] not in COMMANDS:
            return None
        params, _ = _options(rest[1:], COMMANDS[rest[0]][1], until_argument=False)
        return Parsed(_folder(root["workspace"]), bool(root["verbose"]), rest[0], params)
    except _Refused:
        return None


def asks_for_help(args: list[str]) -> bool:
    """``loopkit [ROOT OPTIONS] --help`` (or ``-h``): click prints the group's help before
    it looks at any other option's value, so a ``-C`` that is no folder does not matter."""
    if not args or args[-1] not in ("--help", "-h"):
        return False
    try:
        _, rest = _options(args[:-1], ROOT, until_argument=True)
    except _Refused:
        return False
    return not rest


def columns() -> int:
    """``shutil.get_terminal_size().columns`` (what click's help is wrapped to), without
    shutil's ~10 ms of imports: $COLUMNS, else the terminal's, else 80."""
    try:
        count = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        count = 0
    if count <= 0:
        try:
            count = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            count = 0
        count = count or 80
    return count


def help_width() -> int:
    """The width click's HelpFormatter wraps the root's help to (max_content_width 100)."""
    return max(min(columns(), 100) - 2, 50)


def run(args: list[str]) -> int | None:
    """The exit of ``loopkit ARGS`` when this module answers it, else None (click's turn).

    Errors map to exits as through click (:mod:`loopkit.cli.failures`); an interrupt prints
    the empty line click prints before its abort."""
    if asks_for_help(args):
        from loopkit.cli.roothelp import HELP
        from loopkit.commands.echo import echo

        text = HELP.get(help_width())
        if text is None:
            return None
        echo(text)
        return 0
    parsed = parse(args)
    if parsed is None:
        return None
    from loopkit.cli.failures import exit_code_for
    from loopkit.commands.app import App
    from loopkit.commands.echo import echo
    from loopkit.errors import EXIT_SIGINT

    app = App()
    try:
        app.locate(parsed.workspace, verbose=parsed.verbose)
        return body(parsed.command)(app, **parsed.params)
    except (KeyboardInterrupt, EOFError):
        echo(err=True)  # what click prints before its abort, which `run` maps to 130
        return EXIT_SIGINT
    except BrokenPipeError as exc:
        # As click does: the reader has gone, and the interpreter's last flush of stdout
        # must not fail too (a warning, exit 120), so stdout points at /dev/null.
        import contextlib

        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exit_code_for(exc, app)
    except Exception as exc:
        return exit_code_for(exc, app)


def body(command: str) -> Callable[..., int]:
    """The function that runs ``command`` (its module imported now)."""
    module, _, name = COMMANDS[command][0].partition(":")
    __import__(module)
    function: Callable[..., int] = getattr(sys.modules[module], name)
    return function
