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
and parameters, types and defaults included: tests/cli/test_fastpath.py generates the
lines and holds both to it. The root's own ``--help`` (after the root's options, if any) is
click's text, rendered when the
code changes (:mod:`loopkit.cli.roothelp`, written by ``docs/generate.py``) for the widths
a terminal usually has; for any other width click renders it.
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
    value the check click makes (:func:`_choice`, :func:`_number`)."""

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


def _choice(where: str) -> Callable[[str], object]:
    """click.Choice over the names at ``where`` ("module:NAME"), imported on use: only the
    command that checks them pays for them."""

    def check(value: str) -> str:
        module, _, name = where.partition(":")
        __import__(module)
        if value not in getattr(sys.modules[module], name):
            raise _Refused
        return value

    return check


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


ROOT: tuple[Option, ...] = (
    Option("one", "-C", "--workspace", dest="workspace"),  # checked by _folder
    Option("flag", "-v", "--verbose"),
)

_JSON = Option("flag", "--json", dest="as_json")

# The commands answered here: name → ("module:function" of its body, its options).
# tests/cli/test_fastpath.py checks each against the click command of the same name.
COMMANDS: dict[str, tuple[str, tuple[Option, ...]]] = {
    "status": ("loopkit.commands.status:status", (_JSON,)),
    "reply": (
        "loopkit.commands.answer:reply",
        (
            Option("one", "--request-id", "--request_id", required=True),
            Option("one", "--reply", "-r", required=True),
            Option("one", "--expected-updated-at"),
            Option("one", "--by"),
        ),
    ),
    "unblock": (
        "loopkit.commands.answer:unblock",
        (Option("one", "--reply", "-r"), Option("one", "--by")),
    ),
    "requests": (
        "loopkit.commands.requests:list_requests",
        (
            Option("one", "--status", check=_choice("loopkit.requests.record:STATUSES")),
            Option("one", "--kind", check=_choice("loopkit.requests.record:KINDS")),
            _JSON,
        ),
    ),
    "inbox": ("loopkit.commands.inbox:inbox", (_JSON,)),
    "ps": ("loopkit.commands.ps:ps", (_JSON,)),  # with -C or -v (else loopkit.main's)
    "escalate": (
        "loopkit.commands.escalate:escalate",
        (
            Option("one", "--question", "-q", required=True),
            Option("one", "--context", "-c", required=True),
            Option("many", "--attempted", "-a", required=True),
            Option("many", "--choice", dest="choices", required=True),
            Option("one", "--trigger", default="agent"),
            _JSON,
        ),
    ),
    "ask": (
        "loopkit.commands.ask:ask",
        (
            Option("one", "--situation", "-s", required=True),
            Option("one", "--policy", "-p", required=True),
            Option("one", "--prompt", "-q"),
            Option("many", "--option", dest="options"),
            Option("one", "--recommend"),
            Option("one", "--category", check=_choice("loopkit.escalation.policy:CATEGORIES")),
            Option("one", "--confidence", check=_number(0, 1)),
            Option("flag", "--irreversible"),
            Option("one", "--timeout", check=_number(0, low_open=True)),
            Option("one", "--on-timeout", check=_choice("loopkit.config:TIMEOUT_ACTIONS")),
            Option("many", "--attach"),
            Option("one", "--request-id", "--request_id"),
            Option("one", "--key"),
            Option(
                "one", "--kind", default="question", check=_choice("loopkit.requests.record:KINDS")
            ),
            Option("flag", "--block"),
            Option("one", "--check-target"),
            Option("many", "--criterion", dest="criteria"),
            Option("one", "--artifact-url"),
            _JSON,
        ),
    ),
}


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
    from loopkit.app import App
    from loopkit.cli.failures import exit_code_for
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
