"""The everyday command lines without click (loopkit/cli/fastpath.py): whatever the fast
parser accepts, click reads the same way; the ordinary forms are accepted (so the fast path
cannot quietly hand everything to click); anything else is click's, message and exit alike.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopkit.cli import fastpath, invoke
from loopkit.cli.app import load_command, root
from loopkit.cli.roothelp import HELP
from loopkit.commands.echo import echo
from loopkit.errors import RequestNotFound, UsageError

from helpers import ESCALATE, LOOPKIT, POLICY, clean_env


def click_reads(argv: list[str]) -> tuple[dict[str, object], str, dict[str, object]]:
    """The root's parameters, the command and its parameters, as click parses ``argv``."""
    ctx = root.make_context("loopkit", list(argv))
    name, command, rest = root.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
    assert name is not None and command is not None
    sub = command.make_context(name, rest, parent=ctx)
    assert not sub._protected_args and not sub.args, "an everyday command takes no argument"
    return ctx.params, name, sub.params


def fast_reads(argv: list[str]) -> tuple[dict[str, object], str, dict[str, object]] | None:
    parsed = fastpath.parse(argv)
    if parsed is None:
        return None
    root_params = {"workspace": parsed.workspace, "verbose": parsed.verbose}
    return root_params, parsed.command, parsed.params


def typed(value: object) -> object:
    """A value with its type, so that ``1 == 1.0 == True`` cannot hide a difference."""
    if isinstance(value, tuple):
        return ("tuple", tuple(typed(v) for v in value))
    return (type(value).__name__, value)


def same(fast: tuple[dict[str, object], str, dict[str, object]], argv: list[str]) -> None:
    slow = click_reads(argv)
    assert fast[1] == slow[1], argv
    for mine, clicks in ((fast[0], slow[0]), (fast[2], slow[2])):
        assert {k: typed(v) for k, v in mine.items()} == {k: typed(v) for k, v in clicks.items()}, (
            argv
        )


# --- the table is click's declaration ---------------------------------------------------


def _default(param: click.Option, ctx: click.Context) -> object:
    """A single value's default, None for none (click 8.3+: its UNSET)."""
    default = param.get_default(ctx)
    if param.is_flag or param.multiple or default is getattr(click.core, "UNSET", None):
        return None
    return default


def _declared(command: click.Command) -> dict[str, tuple[object, ...]]:
    ctx = click.Context(command)
    found = {}
    for param in command.params:
        assert isinstance(param, click.Option)
        if param.name == "version":
            continue
        choices = tuple(param.type.choices) if isinstance(param.type, click.Choice) else None
        found[param.name or ""] = (
            sorted([*param.opts, *param.secondary_opts]),
            "flag" if param.is_flag else "many" if param.multiple else "one",
            param.required,
            _default(param, ctx),
            choices,
            type(param.type).__name__,
        )
    return found


def _mine(options: tuple[fastpath.Option, ...]) -> dict[str, tuple[object, ...]]:
    return {
        option.dest: (
            sorted(option.names),
            option.takes,
            option.required,
            option.default if option.takes == "one" else None,
        )
        for option in options
    }


@pytest.mark.parametrize("name", sorted(fastpath.COMMANDS))
def test_each_command_takes_the_options_click_declares(name: str) -> None:
    command = load_command(name)
    assert command is not None
    declared = _declared(command)
    assert {dest: entry[:4] for dest, entry in declared.items()} == _mine(
        fastpath.COMMANDS[name][1]
    )
    for option in fastpath.COMMANDS[name][1]:
        kind, choices = declared[option.dest][5], declared[option.dest][4]
        assert (option.check is not None) == (kind in ("Choice", "FloatRange")), option.dest
        if choices is not None:  # every choice passes the check, a near-miss does not
            assert option.check is not None
            assert [option.check(c) for c in choices] == list(choices)  # type: ignore[arg-type]
            for wrong in ("x", str(choices[0]).upper(), f"{choices[0]} "):
                with pytest.raises(fastpath._Refused):
                    option.check(wrong)


def test_the_root_takes_the_options_click_declares() -> None:
    declared = {k: v[:3] for k, v in _declared(root).items()}
    assert declared == {k: v[:3] for k, v in _mine(fastpath.ROOT).items()}


def test_the_help_is_click_s_at_each_width_it_is_stored_for(tmp_path: Path) -> None:
    """Through click in a fresh interpreter, as the fallback prints it; and the fast path."""
    assert sorted(HELP) == [78, 98]
    lines = (["--help"], ["-h"], ["-v", "-C", "nowhere", "-h"], ["--workspace=.", "--help"])
    for (columns, width), line in zip(
        ((80, 78), (100, 98), (160, 98), (80, 78)), lines, strict=True
    ):
        for entry in ("from loopkit.cli.invoke import run", "from loopkit.main import main as run"):
            done = subprocess.run(
                [sys.executable, "-c", f"import sys; {entry}; sys.exit(run({line!r}))"],
                env=clean_env(COLUMNS=str(columns), PYTHONIOENCODING="utf-8"),
                capture_output=True, encoding="utf-8", timeout=60, cwd=tmp_path,
            )  # fmt: skip
            assert (done.returncode, done.stdout) == (0, HELP[width] + "\n"), (columns, entry)


def test_help_at_another_width_is_click_s(monkeypatch: pytest.MonkeyPatch) -> None:
    for columns in ("60", "99", "20"):
        monkeypatch.setenv("COLUMNS", columns)
        assert fastpath.run(["--help"]) is None


def test_only_the_root_s_help_is_answered() -> None:
    for line in (["--help"], ["-h"], ["-v", "--help"], ["-C", "x", "-v", "-h"]):
        assert fastpath.asks_for_help(line), line
    for line in ([], ["status", "--help"], ["--help", "status"], ["--version", "--help"],
                 ["-C", "--help"], ["-vh"], ["--", "--help"], ["--help", "--help"]):  # fmt: skip
        assert not fastpath.asks_for_help(line), line


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-3", "80", "100", "123"])
def test_the_terminal_width_is_shutil_s(monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("LINES", "24")
    assert fastpath.columns() == shutil.get_terminal_size().columns
    monkeypatch.delenv("LINES")
    assert fastpath.columns() == shutil.get_terminal_size().columns


# --- the ordinary forms are the fast path's ---------------------------------------------

# fmt: off
ACCEPTED = [
    ["status"],
    ["status", "--json"],
    ["-C", "{ws}", "status"],
    ["--workspace={ws}", "-v", "status", "--json"],
    ["-C{ws}", "--verbose", "inbox"],
    ["requests"],
    ["requests", "--json"],
    ["requests", "--status", "open", "--kind", "question", "--json"],
    ["requests", "--status=resolved"],
    ["inbox"],
    ["inbox", "--json"],
    ["reply", "--request-id", "r1", "--reply", "A"],
    ["reply", "--request_id=r1", "-r", "B because", "--by", "ann"],
    ["reply", "-rA", "--expected-updated-at", "2026-12-04T10:00:00Z", "--request-id", "r1"],
    ["reply", "--request-id", "r1", "-r", "a", "-r", "b"],  # click: the last one
    ["unblock"],
    ["unblock", "--reply", "A", "--by", "ann"],
    ["unblock", "-r", ""],
    ESCALATE,
    ["escalate", "--question=Q?", "--context", "c", "-a", "one", "-a", "two", "--choice", "A",
     "--choice", "B", "--trigger", "verify-failures", "--json"],
    ["ask", "-s", "The helper's name is unclear.", "-p", POLICY, "-q", "Rename it?"],
    ["ask", "--situation", "s", "--policy", "p", "--option", "Yes=yes", "--option", "No=no",
     "--recommend", "yes", "--category", "ux", "--confidence", "0.4", "--irreversible",
     "--timeout", "30", "--on-timeout", "skip", "--attach", "a.png", "--request-id", "q1",
     "--key", "k", "--kind", "review", "--block", "--check-target", "t", "--criterion", "c1",
     "--criterion", "c2", "--artifact-url", "https://x", "--json"],
]
# fmt: on


@pytest.mark.parametrize("argv", ACCEPTED, ids=" ".join)
def test_the_ordinary_forms_are_answered_without_click(
    ws: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    monkeypatch.chdir(ws.parent)
    argv = [arg.replace("{ws}", ws.name) for arg in argv]
    fast = fast_reads(argv)
    assert fast is not None, argv
    same(fast, argv)


REFUSED = [
    [],
    ["--version"],
    ["-v"],
    ["-C", "/no/such/folder", "status"],
    ["-C", "{file}", "status"],
    ["-vC", "{ws}", "status"],
    ["--", "status"],
    ["status", "--help"],
    ["status", "-h"],
    ["status", "--bogus"],
    ["status", "--js"],  # no abbreviation
    ["status", "--json=1"],
    ["status", "extra"],
    ["requests", "show", "r1"],
    ["requests", "--status", "nope"],
    ["requests", "--kind", "Question"],
    ["reply", "--request-id", "r1"],  # --reply is required
    ["reply", "--request-id", "r1", "--reply"],
    ["reply", "--request-id", "r1", "--reply", "-x"],
    ["reply", "--request-id", "r1", "-r", "--help"],
    ["reply", "--request-id", "r1", "-r", "A", "--"],
    ["escalate", "-q", "Q", "-c", "c", "-a", "a"],  # no --choice
    ["ask", "-s", "s", "-p", "p", "--confidence", "1.5"],
    ["ask", "-s", "s", "-p", "p", "--confidence", "-0"],
    ["ask", "-s", "s", "-p", "p", "--confidence", "1e-1"],
    ["ask", "-s", "s", "-p", "p", "--timeout", "0"],
    ["ask", "-s", "s", "-p", "p", "--timeout", "nan"],
    ["check"],  # main's own fast path, or click: never this one's
    ["run"],
]


@pytest.mark.parametrize("argv", REFUSED, ids=" ".join)
def test_anything_unsure_is_click_s(
    ws: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    (ws / "file").write_text("")
    monkeypatch.chdir(ws)
    argv = [arg.replace("{ws}", ".").replace("{file}", "file") for arg in argv]
    assert fastpath.parse(argv) is None


# --- whatever the fast parser accepts, click reads alike --------------------------------

VALUES = ["A", "B", "plain", "", "x y", "a — b", "=a", "-x", "--help", "-h", "--", "open",
          "resolved", "Open", "question", "review", "ux", "cost", "skip", "abort", "0", "0.5",
          "1", "1.", ".5", "2", "-1", "nan", "1e3", " 1", "１", "ws", "file",
          "nowhere"]  # fmt: skip
ROOT_ITEMS = [["-C", "ws"], ["--workspace", "ws"], ["--workspace=ws"], ["-Cws"], ["-C=ws"],
              ["-C", "file"], ["-C", "nowhere"], ["-v"], ["--verbose"], ["-vC", "ws"],
              ["--version"], ["-h"], ["--"], ["-"], ["ws"]]  # fmt: skip
JUNK = ["--bogus", "--js", "-z", "--json=", "--json=1", "show", "--", "-", "-h", "--help", "x"]


@st.composite
def _given(draw: st.DrawFn, option: fastpath.Option) -> list[str]:
    """``option`` in one of the forms click reads, with a value that may or may not do."""
    name = draw(st.sampled_from(option.names))
    if option.takes == "flag":
        return [draw(st.sampled_from([name, name, f"{name}=", f"{name}x"]))]
    value = draw(st.sampled_from(VALUES))
    forms = [[name, value], [f"{name}={value}" if name.startswith("--") else f"{name}{value}"]]
    return draw(st.sampled_from(forms))


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """Mostly well-formed lines of a command, the required options often all there, each
    option in any of its forms, now and then a token out of place."""
    head = draw(st.lists(st.sampled_from(ROOT_ITEMS), max_size=2))
    command = draw(st.sampled_from([*fastpath.COMMANDS, "check", "bogus"]))
    options = fastpath.COMMANDS.get(command, fastpath.COMMANDS["ask"])[1]
    items: list[list[str]] = []
    if draw(st.integers(0, 3)):
        items += [draw(_given(option)) for option in options if option.required]
    items += draw(st.lists(st.sampled_from(options).flatmap(_given), max_size=6))
    if not draw(st.integers(0, 4)):
        items.insert(draw(st.integers(0, len(items))), [draw(st.sampled_from(JUNK))])
    items = draw(st.permutations(items))
    return [*(t for item in head for t in item), command, *(t for item in items for t in item)]


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fast")
    (folder / "ws").mkdir()
    (folder / "file").write_text("")
    return folder


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argv=command_lines())
def test_what_the_fast_parser_accepts_click_reads_alike(here: Path, argv: list[str]) -> None:
    cwd = os.getcwd()
    os.chdir(here)
    try:
        fast = fast_reads(argv)
        if fast is not None:
            same(fast, argv)
    finally:
        os.chdir(cwd)


def _plain(option: fastpath.Option) -> list[str]:
    """``option`` given once, with a value click accepts."""
    if option.takes == "flag":
        return [option.names[0]]
    value = "plain value"
    if option.check is not None:
        value = next(v for v in VALUES if _passes(option, v))
    return [option.names[-1], value]


def _passes(option: fastpath.Option, value: str) -> bool:
    try:
        assert option.check is not None
        option.check(value)
    except fastpath._Refused:
        return False
    return True


@pytest.mark.parametrize("name", sorted(fastpath.COMMANDS))
def test_the_required_options_alone_and_every_option_once_are_accepted(name: str) -> None:
    """The converse of the above for the plain lines: click parses them, and so must the
    fast parser, else it would quietly hand everyday lines to click."""
    options = fastpath.COMMANDS[name][1]
    required = [name, *(arg for option in options if option.required for arg in _plain(option))]
    every = [name, *(arg for option in reversed(options) for arg in _plain(option))]
    for argv in (required, every):
        fast = fast_reads(argv)
        assert fast is not None, argv
        same(fast, argv)


# --- running: the same output and exit as through click ----------------------------------


def _both(ws: Path, *args: str, env: dict[str, str] | None = None) -> list[tuple[int, str, str]]:
    results = []
    for entry in ("from loopkit.main import main as run", "from loopkit.cli.invoke import run"):
        done = subprocess.run(
            [sys.executable, "-c", f"import sys; {entry}; sys.exit(run(sys.argv[1:]))",
             *args],
            env=env or clean_env(), capture_output=True, text=True, timeout=60, cwd=ws,
        )  # fmt: skip
        results.append((done.returncode, done.stdout, done.stderr))
    return results


def test_the_fast_path_prints_and_exits_as_click_does(ws: Path) -> None:
    subprocess.run([str(LOOPKIT), "init", "--agent", "true"], cwd=ws, env=clean_env(),
                   capture_output=True, check=True, timeout=60)  # fmt: skip
    # status and the listings of an empty workspace, then a refused answer and a bad -C
    for args in (["status"], ["status", "--json"], ["requests"], ["requests", "--json"],
                 ["inbox", "--json"], ["reply", "--request-id", "nope", "-r", "A"],
                 ["reply", "--request-id", "../x", "-r", "A"], ["-C", "/no/such", "status"],
                 ["unblock"], ["status", "--bogus"]):  # fmt: skip
        fast, slow = _both(ws, *args)
        assert fast == slow, args
    fast, slow = _both(ws, "status", env=clean_env(LOOPKIT_WORKSPACE=str(ws / "none")))
    assert fast == slow and fast[0] == 64
    # a block: escalate writes a request each time, so each side raises its own
    first = subprocess.run([sys.executable, "-m", "loopkit", *ESCALATE], cwd=ws,
                           env=clean_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert first.returncode == 2, first.stderr
    [record] = (ws / "requests").glob("*.json")
    fast, slow = _both(ws, "-C", ".", "requests", "--json")
    assert fast == slow
    assert json.loads(fast[1])[0]["request_id"] == record.stem
    fast, slow = _both(ws, "status")
    age = re.compile(r"\(\d+s\)")  # "blocked: since 19:59 UTC (1s)": a second may pass
    assert age.sub("", fast[1]) == age.sub("", slow[1]) and fast[0] == slow[0] == 0
    assert "Which flow?" in fast[1]


def test_an_agent_s_answer_is_refused_alike(ws: Path) -> None:
    env = clean_env(LOOPKIT_AGENT_SESSION="1")
    fast, slow = _both(ws, "reply", "--request-id", "r1", "-r", "A", env=env)
    assert fast == slow


# --- no click underneath; errors and output as click's ---------------------------------


def test_the_fast_path_and_the_bodies_import_no_click() -> None:
    modules = ["loopkit.main", "loopkit.cli.fastpath", "loopkit.cli.failures",
               "loopkit.cli.roothelp", "loopkit.commands.echo",
               *(entry.partition(":")[0] for entry, _ in fastpath.COMMANDS.values())]  # fmt: skip
    probe = f"import sys; [__import__(m) for m in {modules!r}]; print('click' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=clean_env(), timeout=60, check=True)  # fmt: skip
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.parametrize(
    "exc",
    [RequestNotFound("no request r1"), UsageError("workspace 'x' is not a folder"),
     RuntimeError("a bug"), KeyboardInterrupt(), EOFError()],
    ids=lambda exc: type(exc).__name__,
)  # fmt: skip
def test_a_body_s_error_exits_and_says_as_through_click(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    exc: BaseException,
) -> None:  # fmt: skip
    import loopkit.commands.status

    def fails(app: object, **params: object) -> int:
        print("before", flush=True)
        raise exc

    monkeypatch.setattr(loopkit.commands.status, "status", fails)
    monkeypatch.chdir(ws)
    seen = []
    for run in (fastpath.run, invoke.run):
        code = run(["status"])
        seen.append((code, *capsys.readouterr()))
    assert seen[0] == seen[1]
    assert seen[0][0] == {RequestNotFound: 66, UsageError: 64, RuntimeError: 1}.get(type(exc), 130)


@pytest.mark.parametrize("text", ["plain", "", "naïve — ok", "red \x1b[31mX\x1b[0m done"])
@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
@pytest.mark.parametrize("err", [False, True])
def test_echo_writes_what_click_echo_writes(
    monkeypatch: pytest.MonkeyPatch, text: str, encoding: str, err: bool
) -> None:
    written = []
    for write in (click.echo, echo):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict", write_through=True)
        monkeypatch.setattr(sys, "stderr" if err else "stdout", stream)
        write(text, err=err)
        stream.flush()
        written.append(raw.getvalue())
    assert written[0] == written[1]
